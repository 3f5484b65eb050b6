"""DMR on the live local cluster: Flexible Sleep grows, shrinks for a rigid job, keeps its state."""

from __future__ import annotations

import sys

import pytest

from slurm_ext import protocol as p
from slurm_ext.service.events import read_events
from slurm_ext.service.inflight import Reconf

pytestmark = pytest.mark.slurm

FS_ARGS = "--steps 8 --step-seconds 2 --state-mb 64 --max 4"


def test_fs_grows_to_the_maximum_on_an_idle_cluster(slurm, service):
    job = slurm.fs(service.address, FS_ARGS)
    slurm.wait_gone(job)
    res = slurm.fs_result("fs", job)
    assert res["checksum_ok"], res
    assert res["final_size"] == 4
    assert res["resizes"][0][:4] == [0, "expand", 1, 4]  # synchronous: decided and done at step 0
    assert "srun-exit 0" in slurm.output("fs", job)


def test_fs_shrinks_so_a_queued_rigid_job_starts_and_keeps_its_state(slurm, service):
    # long enough to outlive Slurm 22.05's scheduling stall after a resize (20-40 s, docs/admin/slurm.md)
    fs = slurm.fs(service.address, "--steps 60 --step-seconds 4 --state-mb 64 --max 4")
    slurm.wait(lambda: (slurm.job(fs) or {}).get("nodes") == 4, timeout=60)
    limit_before = slurm.job(fs)["limit"]
    fill = slurm.sbatch(max(1, _idle()), "sleep 120", "filler") if _idle() else None
    if fill is not None:
        slurm.wait(lambda: (slurm.job(fill) or {}).get("state") == "RUNNING", timeout=30)
    rigid = slurm.sbatch(2, "sleep 6", "rigid")
    assert slurm.job(rigid)["state"] == "PENDING"  # it cannot start: every node is busy
    running = slurm.wait(lambda: (slurm.job(rigid) or {}).get("state") == "RUNNING" and slurm.job(rigid), 60)
    fs_now = slurm.job(fs)
    assert fs_now["nodes"] == 2  # FS gave up two nodes ...
    assert running["nodes"] == 2  # ... and the rigid job took them
    # the time limit is stretched for the slower FS, in the background after the release
    slurm.wait(lambda: (slurm.job(fs) or {}).get("limit") not in (None, limit_before), timeout=10)
    if fill is not None:
        sh_cancel(fill)
    slurm.wait_gone(fs, timeout=240)
    res = slurm.fs_result("fs", fs)
    assert res["checksum_ok"], res
    kinds = [r[1] for r in res["resizes"]]
    assert "shrink" in kinds and kinds[0] == "expand"


def test_async_mode_acts_one_step_later(slurm, service, tmp_path):
    service.controller.events.path = tmp_path / "events.jsonl"
    job = slurm.fs(service.address, FS_ARGS + " --async", name="fsasync")
    slurm.wait_gone(job)
    res = slurm.fs_result("fsasync", job)
    assert res["checksum_ok"], res
    # The check made at step k is answered while step k runs and carried out at step k+1. On an
    # idle cluster k is 0, but an expansion that misses its deadline is answered "no action" and
    # asked again, so k comes from the service's answers (one per check, in order).
    answers = [e for e in read_events(tmp_path / "events.jsonl", job) if e["kind"] == "decision"]
    k = next((i for i, e in enumerate(answers) if e["action"] == "expand"), None)
    assert k is not None, answers
    assert res["resizes"][0][:2] == [k + 1, "expand"], answers


def test_inhibitor_keeps_calls_away_from_the_service(slurm, service):
    job = slurm.fs(service.address, FS_ARGS, name="fsinh", env={"DMR_INHIBIT_CALLS": "3"})
    slurm.wait_gone(job)
    res = slurm.fs_result("fsinh", job)
    assert res["checksum_ok"], res
    # 8 steps, a reconfiguring point before each; every 3rd call asks: calls 1, 4, 7.
    # Call 1 expands, and the spawned ranks skip the check of the step they join at.
    assert service.controller.counters["check"] == 3


def test_expand_timeout_answers_no_action_and_leaves_no_resizer(slurm, service):
    job = slurm.sbatch(1, "sleep 60", "holder")
    slurm.wait(lambda: (slurm.job(job) or {}).get("state") == "RUNNING", timeout=30)
    fill = slurm.sbatch(_idle(), "sleep 60", "filler")
    slurm.wait(lambda: (slurm.job(fill) or {}).get("state") == "RUNNING", timeout=30)
    ctl = service.controller
    ctl.options = type(ctl.options)(expand_timeout=2)
    node = slurm.job(job)["nodelist"]
    reconf = Reconf(job, "expand", 1, 2, [node])
    assert ctl.inflight.begin(reconf)
    asking = p.Check(
        job_id=job, current=1, min=1, max=2, nodes=[node], agent="127.0.0.1:1:k", python=sys.executable
    )
    decision = ctl._expand(reconf, asking)
    assert decision.action == "none" and "failed" in decision.reason
    assert ctl.inflight.get(job) is None
    assert slurm.job(job)["nodes"] == 1


def _idle() -> int:
    from .conftest import idle_nodes

    return idle_nodes()


def sh_cancel(job_id: int) -> None:
    from .conftest import sh

    sh("scancel", str(job_id), check=False)
