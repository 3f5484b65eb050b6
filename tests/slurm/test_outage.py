"""Slurm unreachable must not look like an empty cluster."""

from __future__ import annotations

import re
import time

import pytest

from slurm_ext.errors import SlurmUnavailable
from slurm_ext.slurm import SlurmCluster

pytestmark = pytest.mark.slurm


def test_an_unreachable_slurmctld_raises_instead_of_showing_no_jobs(local_cluster, tmp_path):
    # the real cluster's configuration, pointed at a port where no slurmctld listens:
    # squeue --json then exits 0 with an "errors" array and no jobs
    conf = local_cluster.cfg.slurm_conf.read_text()
    bad = tmp_path / "slurm.conf"
    bad.write_text(re.sub(r"(?m)^SlurmctldPort=.*$", "SlurmctldPort=1", conf))
    with pytest.raises(SlurmUnavailable, match="squeue: Failed while looking for jobs"):
        SlurmCluster(slurm_conf=bad, timeout=60).snapshot()


def test_slurmctld_stopped_under_the_service_loses_nothing(local_cluster, slurm, jobs):
    """A resize in flight survives slurmctld going away; `cluster up` restarts only slurmctld and
    the job, its nodes and the resize carry on."""
    import sys

    from slurm_ext import protocol as p
    from slurm_ext.local.daemons import stop
    from slurm_ext.policies.dmr import DMRPolicy
    from slurm_ext.service import Controller, ServiceOptions

    job, other = jobs.submit(1, name="outage"), jobs.submit(1, name="other")
    jobs.wait_running(job)
    jobs.wait_running(other)
    node = slurm.job(job).nodes[0]
    other_node = slurm.job(other).nodes[0]
    ctl = Controller(slurm, DMRPolicy(), ServiceOptions(snapshot_interval=0.2, expand_strategy="merge"))
    grown = ctl.check(p.Check(job_id=job, current=1, min=1, max=2, nodes=[node], agent="127.0.0.1:1:k",
                              python=sys.executable))  # fmt: skip
    assert grown.action == "expand", grown  # merged: the job holds 2 nodes, the resize waits for its commit
    _, daemons = local_cluster.registry.load()
    (ctld,) = [d for d in daemons if d.name == "slurmctld"]
    try:
        assert stop(ctld)
        time.sleep(0.5)  # older than the cache: the next read goes to Slurm
        answer = ctl.check(p.Check(job_id=other, current=1, min=1, max=1, nodes=[other_node]))
        assert answer.action == "none" and "Slurm unavailable" in answer.reason, answer
        ctl.housekeeping()
        assert ctl.inflight.get(job) is not None  # not dropped as "job gone"
    finally:
        report = local_cluster.up()  # restarts slurmctld alone, recovering its jobs
    assert report.already_running and ctld.running()
    assert slurm.job(job).is_running and slurm.job(job).node_count == 2
    assert ctl.commit(p.Commit(job_id=job, token=grown.token, ok=True)).ok
