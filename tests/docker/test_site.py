"""A site's cluster (``ELASTIC_DOCKER_SELECT=cons_tres``: 4-CPU nodes under select/cons_tres, small jobs
sharing nodes, ordinary users alice and bob): the service, as root, grows and shrinks alice's
application by expander jobs; a node that bob's one-CPU job holds a part of is not free to anyone's
growth; ``doctor`` says why the merge is not used. Skipped on the other clusters."""

from __future__ import annotations

import json

import pytest

from slurm_ext.backend import JobRequest
from slurm_ext.containers.cluster import DockerCluster
from slurm_ext.decisions import Expand
from slurm_ext.model import NodeState
from slurm_ext.policies.dmr import DMRPolicy
from slurm_ext.slurm import SlurmCluster

from .conftest import NODES, SELECT, SHARED, Jobs
from .test_demo import demo

pytestmark = [
    pytest.mark.docker,
    pytest.mark.skipif(
        SELECT != "cons_tres", reason="a site's cluster only: ELASTIC_DOCKER_SELECT=cons_tres"
    ),
]


def test_demo_as_an_ordinary_user_grows_by_expander_jobs(docker_cluster: DockerCluster) -> None:
    out = demo("--user", "alice")
    assert "expand strategy expander" in out, out[-3000:]  # the merge is one node short under cons_tres
    assert "as alice" in out and "RUNNING on 2 node(s)" in out, out[-3000:]
    assert "state checksum intact" in out and "left behind: none" in out, out[-3000:]


def test_a_node_a_small_job_shares_is_not_free(docker_cluster: DockerCluster, slurm: SlurmCluster,
                                               jobs: Jobs) -> None:  # fmt: skip
    small = submit(slurm, "bob", "-n1")  # one CPU of a 4-CPU node
    jobs.ids.append(small)
    jobs.wait_running(small)
    app = submit(slurm, "alice", "--exclusive", "--comment=dmr:min=1,max=4")
    jobs.ids.append(app)
    jobs.wait_running(app)
    snap = slurm.snapshot()
    shared = snap.job(small).nodes[0]
    assert next(n for n in snap.nodes if n.name == shared).state is not NodeState.IDLE
    assert snap.free == NODES - 2 and snap.job(app).user == "alice" and snap.job(small).user == "bob"
    grow = [d for d in DMRPolicy().decide(snap, [app]) if isinstance(d, Expand)]
    # factor 2: to 4 nodes it would take bob's node too (3 more); to 2 on an idle one
    assert [(d.job_id, d.new_size) for d in grow] == [(app, 2)]


def test_doctor_says_jobs_grow_by_expander_jobs(docker_cluster: DockerCluster) -> None:
    res = docker_cluster.run("slurm-ext", "doctor", "--json")
    assert res.returncode == 0, res.stdout + res.stderr  # the service works here (by expander jobs)
    found = {f["feature"]: f for f in json.loads(res.stdout)["findings"]}
    merge = found["merge expansion"]
    assert (
        merge["status"] == "off"
        and "select/cons_tres merges a second expansion one node short" in merge["detail"]
    ), merge
    assert found["expander jobs"]["status"] == "ok" and found["shrink"]["status"] == "ok", found


def submit(slurm: SlurmCluster, user: str, *options: str) -> int:
    """A one-node ``sleep`` job of ``user`` (from their home on the shared volume)."""
    request = JobRequest(nodes=1, name=f"{user}-job", time_limit=600, command="sleep 600",
                         extra_args=(f"--chdir={SHARED}/{user}", "-o", "/dev/null", *options))  # fmt: skip
    return slurm.as_user(user).submit(request)
