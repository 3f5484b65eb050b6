"""``bench_malleable.py``'s child: one timed run of one row; prints one JSON line.

    python benchmarks/malleable_child.py kth|JOBS|real:NODES:CORES:JOBS POLICY SWF|- REPEAT MODE

MODE is ``-``, ``split``, ``floor`` or ``bound``.
POLICY is ``reference`` (the textbook loop), ``easy-sched`` (EASY's schedule only), ``loading``
(loading the trace only: what an instruction count subtracts) or a ``--policy`` name.
``split`` times the policy's ``decide`` calls apart; ``floor`` times the engine alone (see
:func:`replay_floor`); ``bound`` what any policy on the working copy pays before it decides
anything (see :class:`ViewReplay`).
"""

from __future__ import annotations

import json
import sys
import time
from collections import deque
from collections.abc import Sequence
from typing import Any

from slurm_ext.decisions import Decision, NoAction
from slurm_ext.model import Snapshot
from slurm_ext.policies.base import Policy, QueueCounts, ViewPolicy
from slurm_ext.policies.working_view import WorkingView
from slurm_ext.sim import Simulator
from slurm_ext.sim.registry import Resolved, resolve
from slurm_ext.workloads.model import Workload

Schedule = tuple[list[float], list[float], list[int]]


def workload(trace: str, swf: str) -> Workload:
    if trace == "kth":
        from slurm_ext.workloads import load_workload

        return load_workload(swf)
    if trace.startswith("real:"):  # real:NODES:CORES:JOBS: a real log's first JOBS jobs, all malleable
        from slurm_ext.workloads import load_workload
        from slurm_ext.workloads.model import MalleableRule

        nodes, cores, jobs = (int(v) for v in trace.split(":")[1:])
        wl = load_workload(swf, jobs=jobs, nodes=nodes, cores_per_node=cores)
        return MalleableRule(fraction=1.0, seed=0).apply(wl)
    from slurm_ext.workloads.model import MalleableRule
    from slurm_ext.workloads.synthetic import SyntheticConfig, generate

    wl = generate(SyntheticConfig(jobs=int(trace), nodes=256, seed=1, load=0.7))
    return MalleableRule(fraction=0.5, seed=0).apply(wl)


def schedule(sim: Simulator) -> Schedule:
    return list(sim.table.start_t), list(sim.table.end_t), list(sim.table.size)


class Replay(Policy):
    """Gives back recorded answers, in call order, computing nothing. A recorded call whose
    decisions changed nothing is answered by ``may_act`` instead, as a skipped call."""

    skip_idle = True  # answer a call that changed nothing in may_act (no snapshot is built)

    def __init__(self, of: Policy, said: deque[tuple[str, Any]]) -> None:
        self.name = of.name  # type: ignore[misc]
        self.schedules_jobs = of.schedules_jobs  # type: ignore[misc]
        self.said = said

    def may_act(self, state: QueueCounts) -> bool:
        kind, yes = self.said.popleft()
        assert kind == "may"
        if self.skip_idle and yes and self.said[0][0] == "idle":
            self.said.popleft()
            if not self.said or self.said[0][0] != "decide":
                return False  # a call the simulator skipped on the policy's still_idle: skipped
        if self.skip_idle and yes and all(isinstance(d, NoAction) for d in self.said[0][1]):
            self.said.popleft()  # changes nothing: skip it, as may_act would
            return False
        return bool(yes)

    def decide(self, snap: Snapshot, asking: Sequence[int] | None = None) -> list[Decision]:
        kind, decisions = self.said.popleft()
        assert kind == "decide"
        return decisions  # type: ignore[no-any-return]


class ViewReplay(Replay, ViewPolicy):
    """A lower bound for a policy that plans on a :class:`WorkingView` (DBES, SD, minAgree): it
    is called where the policy was (none skipped) with the working copy the simulator builds for
    such a policy (see ``Simulator._decide``), then gives back the recorded answer. No
    availability profile, no pass over the queue."""

    skip_idle = False

    def plan(self, cl: WorkingView, asking: Sequence[int] | None = None) -> list[Decision]:
        return Replay.decide(self, None, asking)  # type: ignore[arg-type]


class IdleViewReplay(ViewReplay):
    """A :class:`ViewReplay` of a policy that says when calls may be skipped (DBES): the simulator
    asks it where it asked the policy, and it gives back the policy's recorded answer."""

    def still_idle(self, now: float) -> bool:
        kind, said = self.said.popleft()
        assert kind == "idle"
        return bool(said)


def view_replay(of: Policy, said: deque[tuple[str, Any]]) -> ViewReplay:
    """The replay the simulator treats as it treated ``of`` (asked ``still_idle`` or not)."""
    says_idle = type(of).still_idle is not ViewPolicy.still_idle  # type: ignore[attr-defined]
    return (IdleViewReplay if says_idle else ViewReplay)(of, said)


def entry(policy: Policy) -> str:
    """The method the simulator calls for ``policy``'s answers (see ``Simulator._decide``)."""
    return "plan" if isinstance(policy, ViewPolicy) else "decide"


class NoSnapshot(Simulator):
    """The simulator without its snapshots: the replayed policy does not read them."""

    def snapshot(self) -> Snapshot:
        return None  # type: ignore[return-value]


def replay_floor(wl: Workload, r: Resolved, sim: Simulator) -> tuple[Schedule, Replay]:
    """The engine alone: record the policy's answers in a first (untimed) run of ``sim``; return
    its schedule and a :class:`Replay` of them, for a :class:`NoSnapshot` simulator."""
    policy = r.policy
    assert policy is not None
    # ("may", bool), ("idle", bool) and ("decide", decisions), in call order
    said: deque[tuple[str, Any]] = deque()
    may_act, decide = policy.may_act, getattr(policy, entry(policy))
    if isinstance(policy, ViewPolicy):
        still_idle = policy.still_idle

        def recorded_still_idle(now: float) -> bool:
            said.append(("idle", still_idle(now)))
            return bool(said[-1][1])

        policy.still_idle = recorded_still_idle  # type: ignore[method-assign]

    def recorded_may_act(state: QueueCounts) -> bool:
        said.append(("may", may_act(state)))
        return bool(said[-1][1])

    def recorded_decide(seen: Any, asking: Sequence[int] | None = None) -> list[Decision]:
        decisions = decide(seen, asking)
        said.append(("decide", decisions))
        return decisions  # type: ignore[no-any-return]

    policy.may_act = recorded_may_act  # type: ignore[method-assign]
    setattr(policy, entry(policy), recorded_decide)
    sim.run()
    return schedule(sim), Replay(policy, said)


def one_run(wl: Workload, policy: str, mode: str) -> tuple[float, dict[str, Any]]:
    """Seconds of one run (building the simulator and running it) and what it counted, untimed."""
    if policy == "loading":
        return 0.0, {}
    if policy == "reference":
        from easy_reference import easy_starts  # beside this script, so on sys.path

        t0 = time.perf_counter()
        easy_starts(wl)
        return time.perf_counter() - t0, {}
    if policy == "easy-sched":  # the schedule only, what the reference computes
        t0 = time.perf_counter()
        sim = Simulator(wl, "easy", record_timeline=False)
        sim.advance()
        took = time.perf_counter() - t0
        return took, {"finished": sum(1 for e in sim.table.end_t if e >= 0)}
    r = resolve(policy)
    spent = [0.0]
    if mode == "split" and r.policy is not None:
        decide, clock = getattr(r.policy, entry(r.policy)), time.perf_counter

        def timed(seen: Any, asking: Sequence[int] | None = None) -> list[Decision]:
            t = clock()
            try:
                return decide(seen, asking)  # type: ignore[no-any-return]
            finally:
                spent[0] += clock() - t

        setattr(r.policy, entry(r.policy), timed)
    want, answers, make = None, r.policy, Simulator
    if mode in ("floor", "bound") and r.policy is not None:
        want, answers = replay_floor(wl, r, Simulator(wl, r.scheduler, r.policy))
        if mode == "floor":
            make = NoSnapshot
        else:
            answers = view_replay(r.policy, answers.said)
    t0 = time.perf_counter()  # building the job table counts, as the reference's lists do
    sim = make(wl, r.scheduler, answers)
    res = sim.run()
    took = time.perf_counter() - t0
    if want is not None and schedule(sim) != want:
        raise SystemExit("the replay's schedule differs from the policy's")
    run: dict[str, Any] = {"resizes": int(res.resizes.sum()), "finished": int(res.finished.sum())}
    if mode == "split" and r.policy is not None:
        run["decide"] = spent[0]
    return took, run


def main() -> None:
    trace, policy, swf, repeat, mode = sys.argv[1:6]
    wl = workload(trace, swf)
    best, extra = float("inf"), {}
    for _ in range(int(repeat)):  # the fastest of a few runs: the machine is shared
        took, run = one_run(wl, policy, mode)
        if took < best:
            best, extra = took, run
    print(json.dumps({"jobs": len(wl.jobs), "sim": best, "repeat": int(repeat), **extra}))


if __name__ == "__main__":
    main()
