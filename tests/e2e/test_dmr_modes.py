"""DMR's three modes and its priority boost, end to end on the local cluster (FS under dmr-run)."""

from __future__ import annotations

import pytest

from slurm_ext.slurm.adapter import TOP_PRIORITY

from .conftest import sh

pytestmark = pytest.mark.slurm


def resizes(slurm, job: int) -> list[tuple[str, int, int]]:  # noqa: ANN001
    slurm.wait_gone(job, timeout=240)
    res = slurm.fs_result("fs", job)
    assert res["checksum_ok"], res
    return [(r[1], r[2], r[3]) for r in res["resizes"]]


def test_request_mode_gets_exactly_the_size_asked_for(slurm, service):
    # min = max = 4 from the start (a request), on an idle cluster where wide would take all 8
    job = slurm.dmr_fs(
        service.address, 2, "--steps 5 --step-seconds 1 --state-mb 8 --max 8 --plan 0:4", ppn=1
    )
    assert resizes(slurm, job) == [("expand", 2, 4)]


def test_preferred_mode_moves_to_the_preferred_size_while_jobs_wait(slurm, service):
    # FS on 4 nodes prefers 2; once a job waits (one that no shrink of FS could start, so wide
    # optimization would do nothing), FS shrinks to its preferred size. (Growing towards it while jobs
    # wait is rare on live Slurm: backfill plans the idle nodes for the waiting jobs.)
    filler = slurm.sbatch(4, "sleep 120", "filler")
    slurm.wait(lambda: (slurm.job(filler) or {}).get("state") == "RUNNING", timeout=60)
    job = slurm.dmr_fs(service.address, 4, "--steps 8 --step-seconds 4 --state-mb 8 --max 8 --preferred 2",
                       ppn=1)  # fmt: skip
    slurm.wait(lambda: (slurm.job(job) or {}).get("state") == "RUNNING", timeout=60)
    waiting = slurm.sbatch(8, "sleep 5", "waiting")
    try:
        assert resizes(slurm, job) == [("shrink", 4, 2)]
    finally:
        for other in (waiting, filler):
            sh("scancel", str(other), check=False)


def test_wide_mode_takes_the_idle_cluster(slurm, service):
    job = slurm.dmr_fs(service.address, 1, "--steps 6 --step-seconds 2 --state-mb 8 --max 8", ppn=1)
    grown = resizes(slurm, job)
    # all at once, or in steps if some nodes were still being released by a previous job
    assert grown and all(kind == "expand" for kind, _, _ in grown) and grown[-1][2] == 8, grown


def test_the_job_a_shrink_was_made_for_gets_top_priority(slurm, service):
    fs = slurm.dmr_fs(service.address, 4, "--steps 30 --step-seconds 8 --state-mb 8 --max 4", ppn=1)
    slurm.wait(lambda: (slurm.job(fs) or {}).get("state") == "RUNNING", timeout=60)
    filler = slurm.sbatch(4, "sleep 300", "filler")
    slurm.wait(lambda: (slurm.job(filler) or {}).get("state") == "RUNNING", timeout=60)
    first = slurm.sbatch(5, "sleep 5", "first")  # no shrink of FS can start it
    second = slurm.sbatch(2, "sleep 5", "second")  # a shrink 4 -> 2 starts this one
    slurm.wait(lambda: (slurm.job(second) or {}).get("state") == "RUNNING", timeout=90)
    assert slurm.job(first)["state"] == "PENDING"  # the second started first
    assert slurm.job(fs)["nodes"] == 2
    priority = sh("sacct", "-n", "-X", "-j", str(second), "-o", "priority%12", check=False).split()
    squeue_priority = sh("squeue", "-h", "-j", str(second), "-o", "%Q", check=False).split()
    assert str(TOP_PRIORITY) in priority + squeue_priority, (priority, squeue_priority)
    for job in (filler, first, fs):
        sh("scancel", str(job), check=False)
