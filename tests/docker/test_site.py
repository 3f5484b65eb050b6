"""A site's cluster (``ELASTIC_DOCKER_SELECT=cons_tres``, the site profile: 4-CPU nodes under
select/cons_tres, small jobs sharing nodes, partitions ``left`` = n[1-3] and ``right`` = n[3-4],
accounting with associations, limits and QoS enforced, ordinary users alice and bob, the service's
user ``elastic`` with AdminLevel=Operator): the service, as root, grows and shrinks alice's
application by expander jobs; a node that bob's one-CPU job holds a part of is not free to anyone's
growth; ``doctor`` says why the merge is not used; ``cluster exec`` runs commands as a user; the
service started as ``elastic`` by its unit's commands grows alice's job within her partition while
bob's jobs run in the other, shrinks it for a pending job, and refuses bob's requests on it; the EJB
manager started as ``elastic`` by its unit bundles alice's job through the spares her ejb-submit
queued. Skipped on the other clusters."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from collections.abc import Iterator

import hostlist
import pytest

from slurm_ext import protocol as p
from slurm_ext.backend import JobRequest
from slurm_ext.containers import site
from slurm_ext.containers.cluster import DockerCluster
from slurm_ext.decisions import Expand
from slurm_ext.model import NodeState
from slurm_ext.policies.dmr import DMRPolicy
from slurm_ext.slurm import SlurmCluster
from tests.users import CLIENT

from .conftest import NODES, SELECT, SHARED, Jobs, wait
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


# -- the site profile: partitions, accounting, users ---------------------------------------------
def test_two_partitions_share_a_node_and_accounting_is_enforced(docker_cluster: DockerCluster) -> None:
    res = docker_cluster.run("sinfo", "-h", "-o", "%P %N")
    assert sorted(res.stdout.split("\n")[:2]) == ["left* n[1-3]", "right n[3-4]"], res.stdout
    conf = docker_cluster.run("scontrol", "show", "config").stdout
    assert "AccountingStorageEnforce = associations,limits,qos" in conf, conf
    users = docker_cluster.run(
        "sacctmgr", "-n", "-P", "show", "user", "format=user,defaultaccount,adminlevel"
    )
    assert {"alice|users|None", "bob|users|None", "elastic|root|Operator"} <= set(users.stdout.split()), users
    for who, options, refusal in (
        ("alice", ["-t", "2-00:00:00"], "QOSMaxWallDurationPerJobLimit"),  # over the QoS's MaxWall
        ("bob", ["-A", "nosuch"], "Invalid account"),  # an account bob has no association with
    ):
        res = cluster_exec("--user", who, "--", "sbatch", "-o", "/dev/null", *options, "--wrap", "true")
        assert res.returncode == 1 and refusal in res.stderr, res.stdout + res.stderr
    for who in ("root", "alice", "bob"):  # each with an association: accepted
        res = cluster_exec("--user", who, "--", "sbatch", "--parsable", "-o", "/dev/null", "-t", "1",
                           "--wrap", "true")  # fmt: skip
        assert res.returncode == 0 and res.stdout.strip().isdigit(), res.stdout + res.stderr


def test_cluster_exec_runs_as_a_user_and_passes_the_exit_code_on(docker_cluster: DockerCluster) -> None:
    res = cluster_exec("--user", "alice", "--", "sh", "-c", "echo $(id -un) $(pwd); exit 5")
    assert res.returncode == 5 and res.stdout.strip() == "alice /shared/alice", res.stdout + res.stderr
    res = cluster_exec("--", "id", "-un")
    assert res.returncode == 0 and res.stdout.strip() == "root", res.stdout + res.stderr
    res = cluster_exec("--user", "carol", "--", "id")
    assert res.returncode == 2 and res.stderr.strip() == "error: no user 'carol' in the login container", res


# -- the service as the unprivileged operator user ------------------------------------------------
@pytest.fixture(scope="module")
def operator_service(docker_cluster: DockerCluster) -> Iterator[str]:
    """The control service started as ``elastic`` by its unit's ExecStartPre (doctor) and ExecStart,
    after ``slurm-ext install-units`` in the login container; its address for the nodes."""
    # The site's configuration: jobs grow by merge (cons_tres merges a first expansion whole); the
    # expander strategy under an Operator is the test before.
    write_site_config(docker_cluster, "merge")
    unit = site.start_service(docker_cluster)
    assert unit.user == site.SERVICE_USER and "doctor" in unit.exec_start_pre
    wait(lambda: "listening on" in docker_cluster.run("cat", site.SERVICE.log).stdout, 60, "the service")
    ps = docker_cluster.run("ps", "-o", "user=", "-C", "python3").stdout.split()
    assert site.SERVICE_USER in ps and "expand strategy merge" in service_log(docker_cluster), ps
    yield "login:7117"
    site.stop_service(docker_cluster)


def test_doctor_as_the_service_user_passes_service_rights(docker_cluster: DockerCluster) -> None:
    res = cluster_exec(
        "--user", "elastic", "--", "slurm-ext", "doctor", "--service-user", "elastic", "--json"
    )
    assert res.returncode == 0, res.stdout + res.stderr
    found = {f["feature"]: f for f in json.loads(res.stdout)["findings"]}
    assert found["service rights"]["status"] == "ok", found["service rights"]
    assert "AdminLevel=Operator" in found["service rights"]["detail"]
    res = cluster_exec("--user", "bob", "--", "slurm-ext", "doctor", "--service-user", "bob")
    assert (
        res.returncode == 1 and "sacctmgr modify user bob set AdminLevel=Operator" in res.stdout + res.stderr
    )


def test_the_operator_service_grows_alices_job_by_an_expander_job_her_agent_submits(
    docker_cluster: DockerCluster, slurm: SlurmCluster, jobs: Jobs
) -> None:
    """Only root submits a job as another user: an Operator's service asks the application's agent
    (alice's own process) to submit the expander job, and grows her job with it."""
    write_site_config(docker_cluster, "expander")
    site.start_service(docker_cluster)
    try:
        wait(lambda: "listening on" in service_log(docker_cluster), 60, "the service")
        fs = submit_fs(docker_cluster, slurm, "login:7117")
        jobs.ids.append(fs)
        jobs.wait_running(fs)
        helpers: list[tuple[str, int]] = []

        def expander_running() -> bool:
            helpers[:] = [(j.user, j.node_count) for j in slurm.snapshot().jobs
                          if j.name == f"expander-for-{fs}" and j.is_running]  # fmt: skip
            return bool(helpers)

        wait(expander_running, 120, f"an expander job of alice's job {fs}")
        assert helpers == [("alice", 1)], helpers
        wait(lambda: slurm.snapshot().job(fs) is None, 300, f"alice's job {fs} to end")
        result = fs_result(docker_cluster, fs)
        assert result["checksum_ok"] and (2, 4) in [(o, n) for _s, _a, o, n, _t in result["resizes"]], result
        log = service_log(docker_cluster)
        assert "expanded 1->2 by expander" in log and "cannot submit" not in log, log[-3000:]
        wait(lambda: not any(j.name.startswith("expander-for-") for j in slurm.snapshot().jobs), 60,
             "no expander job left")  # fmt: skip
    finally:
        site.stop_service(docker_cluster)


def test_the_operator_service_resizes_alices_job_in_her_partition_only(
    docker_cluster: DockerCluster, slurm: SlurmCluster, jobs: Jobs, operator_service: str
) -> None:
    # bob's jobs in the other partition: one CPU of the shared node n3, and the whole of n4
    small = submit(slurm, "bob", "-n1", "-p", "right", "-w", "n3")
    whole = submit(slurm, "bob", "--exclusive", "-p", "right", "-w", "n4")
    jobs.ids += [small, whole]
    for job in (small, whole):
        jobs.wait_running(job)
    fs = submit_fs(docker_cluster, slurm, operator_service)
    jobs.ids.append(fs)
    jobs.wait_running(fs)
    # grown to 2 nodes: n1 and n2, the whole nodes free in left (n3 is partly bob's, n4 not left's)
    wait(lambda: slurm.job(fs).node_count == 2, 90, f"alice's job {fs} to grow to 2 nodes")
    assert set(slurm.job(fs).nodes) == {"n1", "n2"} and slurm.job(fs).partition == "left"
    assert set(slurm.job(small).nodes) == {"n3"} and set(slurm.job(whole).nodes) == {"n4"}
    log = service_log(docker_cluster)
    assert f"job {fs} check cur=1" in log and "-> expand" in log, log[-3000:]
    # bob's request on alice's job: refused, by name (the kernel names bob: same container)
    refused = as_user(docker_cluster, "bob", p.Check(job_id=fs, current=2, min=1, max=4, nodes=["n1", "n2"]))
    assert isinstance(refused, p.Error), refused
    assert f"job {fs} belongs to alice" in refused.message and "you are bob" in refused.message
    # a job pending in left: the service shrinks alice's job for it (an Operator's scontrol update)
    pending = submit(slurm, "bob", "--exclusive", "-p", "left")
    jobs.ids.append(pending)
    wait(
        lambda: slurm.job(pending).is_running,
        90,
        f"bob's job {pending} to start on the node alice's gave back",
    )
    assert slurm.job(fs).node_count == 1 and set(slurm.job(pending).nodes) <= {"n1", "n2"}
    wait(lambda: slurm.snapshot().job(fs) is None, 240, f"alice's job {fs} to end")
    result = fs_result(docker_cluster, fs)
    sizes = [(old, new) for _step, _action, old, new, _took in result["resizes"]]
    assert result["checksum_ok"] and sizes == [(2, 4), (4, 2)], result  # 2 ranks per node: 1 -> 2 -> 1 nodes


def cluster_exec(*args: str) -> subprocess.CompletedProcess[str]:
    """``slurm-ext cluster exec --docker ARGS`` from the host."""
    return subprocess.run([sys.executable, "-m", "slurm_ext", "cluster", "exec", "--docker", *args],
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip


def write_site_config(cluster: DockerCluster, strategy: str) -> None:
    """/etc/elastic-slurm/elastic.yaml in the login container (install-units keeps it)."""
    config = f"service:\n  expand_strategy: {strategy}\n  expand_timeout_s: 10\n"
    res = cluster.run(
        "sh", "-c", f"mkdir -p /etc/elastic-slurm && printf '%s' '{config}' >{site.SITE_CONFIG}"
    )
    assert res.returncode == 0, res.stderr


def fs_result(cluster: DockerCluster, fs: int, name: str = "fs") -> dict:
    """The FS_RESULT line of alice's FS job ``fs`` (its output: ``<name>-<fs>.out``)."""
    out = cluster.run("cat", f"{SHARED}/alice/{name}-{fs}.out").stdout
    return json.loads(next(ln for ln in out.splitlines() if ln.startswith("FS_RESULT ")).split(" ", 1)[1])


def service_log(cluster: DockerCluster) -> str:
    return cluster.run("cat", site.SERVICE.log).stdout


def as_user(cluster: DockerCluster, user: str, msg: p.Message) -> p.Message:
    """One request to the service from ``user`` in the login container (where the service runs)."""
    res = cluster.run("runuser", "-u", user, "--", "python3", "-c", CLIENT, "127.0.0.1", "7117",
                      msg.encode().decode())  # fmt: skip
    assert res.returncode == 0, res.stderr
    return p.decode_response(res.stdout)


def submit_fs(cluster: DockerCluster, slurm: SlurmCluster, service: str) -> int:
    """alice's FS in partition left, 2 ranks per whole node, 1 to 4 nodes, checking in with ``service``."""
    script = f"{SHARED}/alice/fs.sh"
    app = "python3 -m dmr_apps.fs --steps 24 --step-seconds 4 --state-mb 16 --max 8"
    body = f"#!/bin/bash\nexport DMR_SERVICE={service}\npython3 -m dmr --ppn 2 -- {app}\n"
    res = cluster.run(
        "runuser", "-u", "alice", "--", "sh", "-c", f"printf '%s' {shlex.quote(body)} >{script}"
    )
    assert res.returncode == 0, res.stderr
    request = JobRequest(nodes=1, name="fs", time_limit=600, script=script,
                         extra_args=(f"--chdir={SHARED}/alice", "-o", f"{SHARED}/alice/fs-%j.out",
                                     "-p", "left", "--ntasks-per-node=2", "--exclusive"))  # fmt: skip
    return slurm.as_user("alice").submit(request)


def test_the_operator_ejb_manager_starts_alices_job_in_a_spare_within_her_partition(
    docker_cluster: DockerCluster, slurm: SlurmCluster, jobs: Jobs
) -> None:
    """The EJB manager started as ``elastic`` by its unit: an Operator cannot submit as alice, so her
    ejb-submit queues held spares as alice, and the manager reshapes and releases one as a subjob,
    in her partition, while a small job of bob's shares the node her job waits for."""
    site.start_service(docker_cluster, daemon=site.MANAGER)
    try:
        wait(lambda: "listening on" in manager_log(docker_cluster), 60, "the EJB manager")
        assert "ejb manager" in site_daemons(docker_cluster)
        # bob's small job holds one CPU of n3 (in both partitions) for up to 30 min: alice's job of
        # 3 whole nodes in left (n[1-3]) is planned after it; n1 and n2 are free until then, a slot
        busy = bobs_small_job(slurm, jobs, "right", "n3")
        j0 = ejb_submit_fs(docker_cluster)
        jobs.ids.append(j0)

        def status() -> dict:
            res = docker_cluster.run("ejb", "status", str(j0), "--json")
            assert res.returncode == 0, res.stderr
            return json.loads(res.stdout)["apps"][0]

        wait(lambda: status()["phase"] in ("done", "failed", "cancelled"), 420, f"alice's job {j0} to end")
        app = status()
        events = [what for _, what in app["events"]]
        log = manager_log(docker_cluster)
        out = docker_cluster.run("cat", f"{SHARED}/alice/fs-ejb-{j0}.out").stdout  # a crash's traceback
        assert app["phase"] == "done" and app["exit_code"] == 0, (events, log[-3000:], out[-3000:])
        released = [what for what in events if what.startswith("released spare")]
        assert released, (events, log[-3000:])
        subjobs = [s for key, s in app["subjobs"].items() if key != "0" and s["job_id"]]
        assert subjobs and all(s["spare"] is not None for s in subjobs), app["subjobs"]
        for sub in subjobs:  # alice's jobs, in left, never on bob's node or outside her partition
            done = docker_cluster.run("sacct", "-X", "-n", "-P", "-j", str(sub["job_id"]),
                                      "-o", "User,Partition,NodeList").stdout.split("|")  # fmt: skip
            assert done[:2] == ["alice", "left"] and set(sub["hosts"]) <= {"n1", "n2"}, (done, sub)
        result = fs_result(docker_cluster, j0, "fs-ejb")
        assert result["checksum_ok"], result
        # J0 and the spares not used went with the job; bob's job is untouched
        wait(lambda: not [j for j in slurm.snapshot().jobs if j.user == "alice"], 60, "no job of alice left")
        assert slurm.job(busy).is_running
    finally:
        site.stop_service(docker_cluster, site.MANAGER)


def manager_log(cluster: DockerCluster) -> str:
    return cluster.run("cat", site.MANAGER.log).stdout


def ejb_submit_fs(cluster: DockerCluster) -> int:
    """alice's FS through ejb-submit: 3 whole nodes of left, 2 ranks per node, 5 minutes; J0's id."""
    script = f"{SHARED}/alice/fs-ejb.sh"
    app = "python3 -m dmr_apps.fs --steps 24 --step-seconds 4 --state-mb 16 --min 1 --max 12"
    body = (f"#!/bin/bash\n#SBATCH -N 3\n#SBATCH --ntasks-per-node=2\n#SBATCH -t 5\n#SBATCH -p left\n"
            f"#SBATCH --exclusive\nexport PYTHONFAULTHANDLER=1\npython3 -m dmr -- {app}\n")  # fmt: skip
    line = (f"cd {SHARED}/alice && printf '%s' {shlex.quote(body)} >{script} && "
            f"ejb-submit --parsable --ejb-min-procs 2 --ejb-require -o {SHARED}/alice/fs-ejb-%j.out "
            f"{script}")  # fmt: skip
    res = cluster.run("runuser", "-u", "alice", "--", "sh", "-c", line)
    assert res.returncode == 0 and "bundled" in res.stderr, res.stdout + res.stderr
    return int(res.stdout.strip().split(";")[0])


@pytest.mark.skipif(NODES != 7, reason="the site profile with 7 nodes: ELASTIC_DOCKER_NODES=7")
def test_alices_dmr_demo_and_bobs_ejb_demo_run_at_the_same_time(
    docker_cluster: DockerCluster, slurm: SlurmCluster, jobs: Jobs
) -> None:
    """On 7 nodes (left = n[1-4], right = n[4-7]) with the site's service and EJB manager running as
    elastic (``--start-units``): a small job of bob's holds a CPU of the shared n4 all along; bob's
    ``ejb demo`` in right through the site's manager (a background job on n5-n6, his 2-node job
    started at once in one of his spares, released on n7, then moved to J0) and alice's ``slurm-ext
    demo`` in left (FS grown and shrunk for her rigid job) at the same time; each user's jobs stay in
    their partition and off the shared node, both demos end right, nothing is left behind."""
    assert site_daemons(docker_cluster) == {"slurm_ext serve", "ejb manager"}
    small = bobs_small_job(slurm, jobs, "right", "n4")
    since = docker_cluster.run("date", "+%Y-%m-%dT%H:%M:%S").stdout.strip()
    argv = [sys.executable, "-m", "ejb", "demo", "--docker", "--user", "bob", "--partition", "right",
            "--manager", "127.0.0.1:7118", "--json"]  # fmt: skip
    bobs = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:

        def bobs_background_runs() -> bool:
            return any(j.user == "bob" and j.name == "rigid-background" and j.is_running
                       for j in slurm.snapshot().jobs)  # fmt: skip

        wait(lambda: bobs_background_runs() or bobs.poll() is not None, 120, "bob's background job")
        alices = demo("--user", "alice")
        out, err = bobs.communicate(timeout=600)
    finally:
        if bobs.poll() is None:
            bobs.kill()
    assert bobs.returncode == 0, (out + err)[-3000:]
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["ok"] and summary["started_in_a_subjob"] and not summary["leftover_jobs"], summary
    assert summary["user"] == "bob" and summary["wait"] < 30, summary  # the background job holds 60 s
    right = {"n5", "n6", "n7"}
    assert all(set(hosts) <= right for hosts in summary["subjob_hosts"].values()), summary["subjob_hosts"]
    subjobs = [sub for key, sub in summary["status"]["subjobs"].items() if key != "0" and sub["job_id"]]
    assert subjobs and all(sub["spare"] is not None for sub in subjobs), subjobs  # bob's own held spares
    assert "as alice" in alices and "state checksum intact" in alices and "left behind: none" in alices, (
        alices[-3000:]
    )
    # every job in its user's partition, the shared n4 only for part 1's job (it asks for no whole node)
    rows = docker_cluster.run("sacct", "-X", "-n", "-P", "-S", since, "-u", "alice,bob",
                              "-o", "JobID,User,JobName,Partition,NodeList").stdout  # fmt: skip
    for row in rows.splitlines():
        _, user, name, partition, nodes = row.split("|")
        if nodes == "None assigned":  # never ran (J0 or a spare, once the job ended in a subjob)
            continue
        if user == "alice":
            assert partition == "left" and not {"n5", "n6", "n7"} & set(hostlist.expand_hostlist(nodes)), row
        elif name != "bob-job":
            assert partition == "right" and set(hostlist.expand_hostlist(nodes)) <= right, row
    assert slurm.job(small).is_running
    assert site_daemons(docker_cluster) == {"slurm_ext serve", "ejb manager"}


def bobs_small_job(slurm: SlurmCluster, jobs: Jobs, partition: str, node: str) -> int:
    """A rigid job of bob's on one CPU of ``node`` for up to 30 min (others may share the node); running."""
    job_id = slurm.as_user("bob").submit(JobRequest(
        nodes=1, name="bob-job", time_limit=1800, command="sleep 1800",
        extra_args=(f"--chdir={SHARED}/bob", "-o", "/dev/null", "-p", partition, "-w", node, "-n1"),
    ))  # fmt: skip
    jobs.ids.append(job_id)
    jobs.wait_running(job_id)
    return job_id


def site_daemons(cluster: DockerCluster) -> set[str]:
    """Which of the site's two daemons run in the login container as its service user."""
    ps = cluster.run("ps", "-o", "user=,args=", "-C", "python3").stdout.splitlines()
    return {name for name in ("slurm_ext serve", "ejb manager")
            for ln in ps if ln.split()[:1] == [site.SERVICE_USER] and name in ln}  # fmt: skip
