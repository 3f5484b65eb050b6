"""Sizes the application's runtime can take: a policy other than DMR picks any size in a job's range
(minAgree shrinks one node at a time), but the runtime resizes only by its declared factor and
refuses a size from which its preferred one is out of reach. The service rounds to those sizes."""

from __future__ import annotations

from pathlib import Path

from slurm_ext import protocol as p
from slurm_ext.decisions import Shrink
from slurm_ext.model import MalleableSpec, Snapshot
from slurm_ext.service import Controller, ServiceOptions

from .memory_backend import MemoryBackend
from .test_moldable_start import StartsAt, events_of
from .test_service import check


def test_a_resize_goes_to_the_nearest_size_the_factor_reaches_without_passing_the_target() -> None:
    spec = MalleableSpec(1, 8, factor=2)
    assert spec.toward(4, 3) == 2  # a shrink frees at least what was asked
    assert spec.toward(4, 1) == 1 and spec.toward(4, 2) == 2
    assert spec.toward(2, 7) == 4  # a growth takes no more than it was given
    assert spec.toward(3, 5) == 3  # 3 -> 6 passes 5; 3 cannot be halved: no resize
    assert spec.toward(3, 2) == 3


def test_a_start_size_reaches_the_preferred_size() -> None:
    assert MalleableSpec(1, 8, factor=2, preferred=2).start_size(3) == 2  # 3 cannot reach 2 by 2
    assert MalleableSpec(1, 8, factor=2, preferred=2).start_size(8) == 8
    assert MalleableSpec(2, 8, factor=2, preferred=4).start_size(1) is None
    assert MalleableSpec(1, 8, factor=2).start_size(3) == 3  # no preferred size: any size in range


class ShrinksByOne:
    """minAgree's way: one node at a time off the asking job."""

    name = "by-one"

    def decide(self, snap: Snapshot, asking: object = None) -> list:
        return [Shrink(j.job_id, j.node_count - 1, "one node less") for j in snap.running]

    def may_act(self, state: object) -> bool:
        return True


def test_a_shrink_by_one_node_becomes_one_by_the_applications_factor() -> None:
    backend = MemoryBackend(4)
    backend.add(1, 4)
    ctl = Controller(backend, ShrinksByOne(), ServiceOptions(snapshot_interval=0.05))  # type: ignore[arg-type]
    d = ctl.check(check(1, 4, list(backend.jobs[1].nodes), lo=1, hi=4))
    assert d.action == p.ACTION_SHRINK and d.new_size == 2, d  # 4 -> 3 is not a size of factor 2
    assert "factor" in d.reason
    ctl.background.shutdown(wait=True)


def test_a_molded_start_is_a_size_that_reaches_the_preferred_one(tmp_path: Path) -> None:
    backend = MemoryBackend(8)
    backend.add(1, 5)
    backend.add(9, 4, pending=True, limit=600.0, malleable=MalleableSpec(1, 4, factor=2, preferred=2))
    options = ServiceOptions(snapshot_interval=0.0, events_path=tmp_path / "events.jsonl")
    ctl = Controller(backend, StartsAt(3), options)  # type: ignore[arg-type]
    ctl.plan_cluster()
    assert backend.calls[0] == ("resize_pending", 9, 2, 1200)  # 3 cannot reach 2 by factor 2; 2 can
    (mold,) = events_of(ctl, "mold")
    assert mold["ok"] and mold["new"] == 2
