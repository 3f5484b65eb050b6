"""The queued jobs by size (queue_index.py): what EASY's pass tries in a policy run's long queue."""

from __future__ import annotations

from collections import Counter

from slurm_ext.sim import Simulator
from slurm_ext.sim.queue_index import QueueBySize
from slurm_ext.sim.registry import resolve
from slurm_ext.workloads.model import MalleableRule, Workload
from tests.unit.slurm_ext.sim.simworkloads import random_workload


def test_fitting_lists_the_jobs_up_to_the_free_nodes_in_queue_order() -> None:
    index = QueueBySize(8)
    qkey = [5, 2, 9, -1, 7, 3]  # job 3 was raised to the head; then 1, 5, 0, 4, 2
    for i, size in enumerate([1, 3, 2, 8, 1, 4]):
        index.sets[size].add(i)
    assert index.fitting(3, qkey) == [1, 0, 4, 2]
    assert index.fitting(0, qkey) == []
    assert index.fitting(8, qkey) == [3, 1, 5, 0, 4, 2]


def test_a_copy_is_independent() -> None:
    index = QueueBySize(4)
    index.sets[2].add(7)
    copy = index.copy()
    copy.sets[2].discard(7)
    copy.sets[1].add(3)
    assert index.sets[2] == {7} and not index.sets[1]


def busy_malleable(seed: int) -> Workload:
    # Jobs arrive faster than they run: the queue grows long, as DMR's does.
    wl = random_workload(seed, n=400, nodes=32)
    return MalleableRule(fraction=0.5, seed=seed).apply(wl)


class _Watched(Simulator):
    """Checks after every scheduling step that the index holds exactly the queue, by size, and
    counts the passes that used it."""

    def _schedule(self) -> None:
        super()._schedule()
        index = self.queue_by_size
        assert index is not None
        assert {s: jobs for s, jobs in enumerate(index.sets) if jobs} == by_size_of(self)


def by_size_of(sim: Simulator) -> dict[int, set[int]]:
    """The queue grouped by size, as the index should hold it."""
    want: dict[int, set[int]] = {}
    for i in sim.queue:
        want.setdefault(sim.table.size[i], set()).add(i)
    return want


class _Counting(QueueBySize):
    """Counts the passes that use the index and, at each, checks it against the queue (from inside
    the pass, without a Simulator subclass)."""

    calls: Counter[str]
    sim: Simulator

    def fitting(self, free: int, qkey: list[int]) -> list[int]:
        self.calls["fitting"] += 1
        assert {s: jobs for s, jobs in enumerate(self.sets) if jobs} == by_size_of(self.sim)
        return super().fitting(free, qkey)


def run(wl: Workload, cls: type[Simulator], indexed: bool) -> tuple[Simulator, Counter[str]]:
    r = resolve("dmr")
    sim = cls(wl, r.scheduler, r.policy)
    calls: Counter[str] = Counter()
    if indexed:
        counting = _Counting(wl.nodes)
        counting.calls = calls
        counting.sim = sim
        sim.queue_by_size = counting
    else:
        sim.queue_by_size = None  # EASY's pass scans the whole queue
    sim.run()
    return sim, calls


def test_a_policy_run_with_easy_keeps_the_index_and_a_rigid_run_does_not() -> None:
    wl = busy_malleable(1)
    r = resolve("dmr")
    assert isinstance(Simulator(wl, r.scheduler, r.policy).queue_by_size, QueueBySize)
    assert Simulator(wl, "easy").queue_by_size is None
    assert Simulator(wl, "fcfs", resolve("dmr").policy).queue_by_size is None


def test_the_index_follows_the_queue_at_every_step() -> None:
    _, calls = run(busy_malleable(2), _Watched, indexed=True)
    assert calls["fitting"] > 50  # the index was used, not only kept


def test_easy_starts_the_same_jobs_with_and_without_the_index() -> None:
    for seed in (3, 4, 5):
        wl = busy_malleable(seed)
        with_index, calls = run(wl, Simulator, indexed=True)
        scanned, _ = run(wl, Simulator, indexed=False)
        assert calls["fitting"] > 50
        for column in ("start_t", "end_t", "size", "resizes"):
            assert getattr(with_index.table, column) == getattr(scanned.table, column), column
        assert with_index.resize_log == scanned.resize_log


def test_a_copy_of_the_simulator_has_its_own_index() -> None:
    wl = busy_malleable(6)
    r = resolve("dmr")
    sim = Simulator(wl, r.scheduler, r.policy)
    sim.run(until=wl.jobs[len(wl.jobs) // 2].submit)
    assert sim.queue  # something is queued at the copy
    copy = sim.copy()
    assert copy.queue_by_size is not sim.queue_by_size
    a, b = sim.run(), copy.run()
    assert a.start.tolist() == b.start.tolist()
