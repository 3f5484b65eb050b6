"""Decisions within the job's partition, on the local cluster with two partitions made for the
test beside its default one (``lower``: the first half of the nodes, ``upper``: the second half;
the default partition has them all, so its nodes are shared)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import hostlist
import pytest

from .conftest import idle_nodes, sh

pytestmark = pytest.mark.slurm

PPN = 2


@pytest.fixture
def halves(slurm) -> Iterator[tuple[list[str], list[str]]]:  # noqa: ANN001 -- slurm: every node idle
    nodes = sorted(set(sh("sinfo", "-h", "-N", "-o", "%N").split()), key=lambda n: int(n.lstrip("n")))
    half = len(nodes) // 2
    lower, upper = nodes[:half], nodes[half:]
    for name, members in (("lower", lower), ("upper", upper)):
        sh("scontrol", "create", f"PartitionName={name}", f"Nodes={hostlist.collect_hostlist(members)}",
           "MaxTime=INFINITE", "State=UP")  # fmt: skip
    try:
        yield lower, upper
    finally:
        slurm.cleanup()
        for name in ("lower", "upper"):  # a partition with jobs (a helper left behind) cannot go
            sh("scancel", f"--partition={name}", check=False)
            slurm.wait(lambda n=name: not sh("squeue", "-h", "-p", n, check=False).strip(), timeout=60)
            sh("scontrol", "delete", f"PartitionName={name}", check=False)


def nodes_of(slurm, job: int) -> list[str]:  # noqa: ANN001
    info = slurm.job(job)
    return hostlist.expand_hostlist(info["nodelist"]) if info and info["state"] == "RUNNING" else []


def test_a_job_grows_within_its_partition_and_shrinks_only_for_a_job_that_can_use_the_nodes(
    slurm, halves, make_service
):
    lower, upper = halves
    server = make_service("merge")
    job = slurm.dmr_fs(server.address, 1, "--steps 400 --step-seconds 1 --max 64", ppn=PPN,
                       sbatch_args=("-p", "upper"))  # fmt: skip
    # all of upper, though the lower half is idle too and the job would take 32 nodes
    grown = slurm.wait(lambda: len(n := nodes_of(slurm, job)) == len(upper) and n, timeout=120)
    assert set(grown) == set(upper), grown
    assert idle_nodes() == len(lower)
    # lower filled, and a job waiting there: upper's nodes are no use to it, so no shrink
    filler = slurm.sbatch(len(lower), "sleep 600", "filler", args=("-p", "lower"))
    slurm.wait(lambda: (slurm.job(filler) or {}).get("state") == "RUNNING", timeout=60)
    waiting = slurm.sbatch(2, "sleep 600", "waiting-lower", args=("-p", "lower"))
    time.sleep(8)  # several checks of the grown job
    assert len(nodes_of(slurm, job)) == len(upper)
    assert (slurm.job(waiting) or {}).get("state") == "PENDING"
    # a job of the default partition (every node) can use what a shrink frees: the job shrinks for it
    other = slurm.sbatch(2, "sleep 600", "waiting-all")
    slurm.wait(lambda: (slurm.job(other) or {}).get("state") == "RUNNING", timeout=120)
    assert set(hostlist.expand_hostlist(slurm.job(other)["nodelist"])) <= set(upper)
    assert len(nodes_of(slurm, job)) == len(upper) - 2
    assert (slurm.job(waiting) or {}).get("state") == "PENDING"


def test_ejb_finds_slots_and_starts_subjobs_only_in_the_jobs_partition(slurm, halves, tmp_path):  # noqa: ANN001
    """Half of ``upper`` busy (a long job on its first nodes) and ``lower`` idle: a job asking all
    but one node of ``upper`` is planned on the busy nodes and one free node; it is bundled from a
    subjob on upper's last node (lower's slot, larger, is none of its own)."""
    import subprocess
    import sys

    from ejb.live import scenario
    from slurm_ext.config import load_config
    from slurm_ext.protocol import free_port

    lower, upper = halves
    conf = load_config().cluster.slurm_conf
    port, service_port = free_port(), free_port()
    manager = scenario.start_manager(tmp_path / "state", tmp_path / "manager.log", port, service_port, conf)
    try:
        held = hostlist.collect_hostlist(upper[: len(upper) // 2])
        busy = slurm.sbatch(
            len(upper) // 2, "sleep 600", "busy-upper", args=("-p", "upper", "-t", "60", "-w", held)
        )
        slurm.wait(lambda: (slurm.job(busy) or {}).get("state") == "RUNNING", timeout=60)
        env = {**scenario.env_for(conf), "EJB_MANAGER": f"127.0.0.1:{port}"}
        fs = f"{scenario.FS} --steps 400 --step-seconds 1 --min 1 --max 64"
        out = str(tmp_path / "out-%j.txt")
        res = subprocess.run(["ejb-submit", "--parsable", "-p", "upper", "-N", str(len(upper) - 1),
                              "--ntasks-per-node=2", "--ejb-min-procs=1", "-t", "5", "-J", "wrapped",
                              "-o", out, "--wrap", f"dmr-run -- {sys.executable} {fs}"],
                             capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)  # fmt: skip
        assert res.returncode == 0, res.stderr
        job = int(res.stdout.strip())
        slurm.jobs.append(job)

        def subjobs() -> list[tuple[str, str]]:  # (state, nodes) of each subjob of the job
            out = sh("squeue", "-h", "-o", "%j|%T|%N")
            return [(st, nodes) for name, st, nodes in (ln.split("|") for ln in out.splitlines())
                    if name.startswith(f"ejb{job}.")]  # fmt: skip

        running = slurm.wait(lambda: [n for st, n in subjobs() if st == "RUNNING"], timeout=120)
        log = (tmp_path / "manager.log").read_text(errors="replace")[-3000:]
        for nodes in running:
            assert set(hostlist.expand_hostlist(nodes)) <= set(upper), (nodes, log)
        assert all(st == "RUNNING" for st, _ in subjobs()), (subjobs(), log)  # none left waiting
        assert idle_nodes() >= len(lower)  # lower untouched
    finally:
        scenario.stop_manager(manager)
