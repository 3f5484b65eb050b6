"""``slurm-ext simulate -w sacct:START..END`` on the accounting of the dockerized cluster
(ELASTIC_DOCKER_RELEASE): jobs run there come back as the simulated workload, in the login container
(sacct there) and, from sacct's saved output, on this host (``sacct-file:``)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from slurm_ext.containers.cluster import DockerCluster
from slurm_ext.workloads.sacct import load_sacct

from .conftest import NODES, SHARED, wait

pytestmark = pytest.mark.docker

OUT = f"{SHARED}/simulate-sacct"


def _ok(cluster: DockerCluster, *args: str, timeout: float = 120) -> str:
    res = cluster.run(*args, timeout=timeout)
    assert res.returncode == 0, (args, res.stdout, res.stderr)
    return res.stdout


def _sbatch(cluster: DockerCluster, *args: str) -> int:
    out = _ok(cluster, "sbatch", "--parsable", f"--chdir={SHARED}", "-o", "/dev/null", *args)
    return int(out.strip().split(";")[0])


@pytest.fixture(scope="module")
def ran(docker_cluster: DockerCluster) -> Iterator[tuple[str, str, dict[str, int]]]:
    """(window start, partition, job name -> id): three jobs that ran and one cancelled while pending."""
    c = docker_cluster
    wait(lambda: c.node_states().count("idle") == NODES, 60, "all nodes idle")
    partition = next(p.rstrip("*") for p in _ok(c, "sinfo", "-h", "-o", "%P").split() if p.endswith("*"))
    start = _ok(c, "date", "+%Y-%m-%dT%H:%M:%S").strip()
    ids = {"one": _sbatch(c, "-J", "one", "-N", "1", "-t", "2", "--wrap", "sleep 6")}
    time.sleep(2)  # submitted 2 s apart: relative submit times
    ids["two"] = _sbatch(c, "-J", "two", "-N", "2", "-t", "3", "--wrap", "sleep 2")
    ids["fails"] = _sbatch(c, "-J", "fails", "-N", "1", "-t", "1", "--wrap", "sleep 1; exit 3")
    ids["waits"] = _sbatch(c, "-J", "waits", "-N", str(NODES), "-t", "1", "--wrap", "true")
    try:
        wait(lambda: _ok(c, "squeue", "-h", "-j", str(ids["waits"]), "-o", "%T").strip() == "PENDING",
             10, "the whole-cluster job to wait")  # fmt: skip
        _ok(c, "scancel", str(ids["waits"]))
        job_list = ",".join(map(str, ids.values()))

        def recorded() -> bool:  # slurmdbd has every job's end
            lines = _ok(c, "sacct", "-n", "-X", "-P", "-j", job_list, "-o", "state").splitlines()
            states = [line.split()[0] for line in lines if line.strip()]  # "CANCELLED by 0"
            return len(states) == len(ids) and not {"PENDING", "RUNNING"} & set(states)

        wait(recorded, 90, "the jobs to end in the accounting")
        yield start, partition, ids
    finally:
        c.run("scancel", *map(str, ids.values()))


def test_simulate_reads_the_jobs_that_ran(
    docker_cluster: DockerCluster, ran: tuple[str, str, dict[str, int]]
) -> None:
    start, partition, ids = ran
    res = docker_cluster.run(
        "slurm-ext", "simulate", "-w", f"sacct:{start}..now@{partition}", "-p", "easy", "-q",
        "-o", OUT, "--no-plots", timeout=120,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    assert "cancelled while pending" in res.stdout, res.stdout
    rows = {
        int(r["job_id"]): r
        for r in csv.DictReader(_ok(docker_cluster, "cat", f"{OUT}/easy.jobs.csv").splitlines())
    }
    ran_ids = {ids["one"], ids["two"], ids["fails"]}
    assert ran_ids <= set(rows) and ids["waits"] not in rows, rows
    assert {int(rows[i]["nodes"]) for i in ran_ids} == {1, 2}
    assert int(rows[ids["two"]]["nodes"]) == 2 and float(rows[ids["two"]]["submit"]) >= 1


def test_saved_accounting_simulates_the_same_jobs_here(
    docker_cluster: DockerCluster, ran: tuple[str, str, dict[str, int]], tmp_path: Path
) -> None:
    start, partition, ids = ran
    saved = tmp_path / "sacct.json"
    saved.write_text(_ok(docker_cluster, "sacct", "--json", "-a", "-X", "-S", start, "-E", "now"))
    wl = load_sacct(f"sacct-file:{saved}@{partition}")
    jobs = {j.job_id: j for j in wl.jobs}
    assert {ids["one"], ids["two"], ids["fails"]} <= set(jobs)
    assert jobs[ids["two"]].nodes == 2 and jobs[ids["two"]].time_limit == 180.0
    assert jobs[ids["one"]].time_limit == 120.0 and 5 <= jobs[ids["one"]].run_time <= 10
    assert jobs[ids["two"]].submit - jobs[ids["one"]].submit >= 1
    assert (ids["waits"], "cancelled while pending") in {(s.job_id, s.reason) for s in wl.skipped}
    # the command on this host, as a site admin would run it on a copy
    cmd = [sys.executable, "-m", "slurm_ext", "compare", "-w", f"sacct-file:{saved}", "-p", "fcfs,easy", "-q",
           "--json"]  # fmt: skip
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 0, res.stdout + res.stderr
    assert [s["policy"] for s in json.loads(res.stdout)] == ["fcfs", "easy"]


def test_a_bad_window_is_one_line_and_exit_2(docker_cluster: DockerCluster) -> None:
    res = docker_cluster.run("slurm-ext", "simulate", "-w", "sacct:yesterday-ish..now", "-q", timeout=60)
    assert res.returncode == 2, res.stdout + res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: sacct --json") and "failed" in lines[0], res.stderr
