"""A start at another size than the job asked (a policy's moldable start), carried out live as
Slurm allows it: the pending job's node count set, its time limit scaled, its priority raised."""

from __future__ import annotations

from pathlib import Path

from slurm_ext.decisions import StartJob
from slurm_ext.model import MalleableSpec, Snapshot
from slurm_ext.service import Controller, ServiceOptions
from slurm_ext.service.events import read_events

from .memory_backend import MemoryBackend


class StartsAt:
    """A policy that starts each pending job at ``nodes`` nodes."""

    name = "starts-at"

    def __init__(self, nodes: int) -> None:
        self.nodes = nodes

    def decide(self, snap: Snapshot, asking: object = None) -> list:
        return [StartJob(j.job_id, self.nodes, "moldable start") for j in snap.pending]

    def may_act(self, state: object) -> bool:
        return True


def plan(backend: MemoryBackend, nodes: int, tmp_path: Path) -> Controller:
    options = ServiceOptions(snapshot_interval=0.0, events_path=tmp_path / "events.jsonl")
    ctl = Controller(backend, StartsAt(nodes), options)  # type: ignore[arg-type]
    ctl.plan_cluster()
    return ctl


def events_of(ctl: Controller, kind: str) -> list[dict]:
    assert ctl.options.events_path is not None
    return [e for e in read_events(ctl.options.events_path) if e["kind"] == kind]


def test_a_job_with_a_range_is_molded_to_the_size_decided_and_checked_when_it_starts(tmp_path: Path) -> None:
    backend = MemoryBackend(8)
    backend.add(1, 6)
    backend.add(9, 4, pending=True, limit=600.0, malleable=MalleableSpec(1, 4))
    ctl = plan(backend, 2, tmp_path)
    assert backend.calls[:2] == [("resize_pending", 9, 2, 1200), ("raise_priority", 9)]
    assert ctl.molded == {9: 2}
    with backend.lock:  # Slurm starts it on the 2 free nodes
        del backend.jobs[9]
    backend.add(9, 2)
    ctl.plan_cluster()
    (started,) = events_of(ctl, "molded-start")
    assert started["ok"] and started["nodes"] == 2 and ctl.molded == {}


def test_a_job_without_a_range_keeps_its_size_and_is_only_raised(tmp_path: Path) -> None:
    backend = MemoryBackend(8)
    backend.add(1, 6)
    backend.add(9, 4, pending=True)
    ctl = plan(backend, 2, tmp_path)
    assert backend.calls == [("raise_priority", 9)]
    (refused,) = events_of(ctl, "mold")
    assert not refused["ok"] and "no declared range" in refused["reason"]
