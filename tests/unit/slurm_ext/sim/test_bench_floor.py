"""``bench_malleable.py --floor``: the replayed answers give the policy's schedule, and a replay
that lost one answer does not (so the benchmark's equality check can fail)."""

from __future__ import annotations

import pytest

from slurm_ext.decisions import NoAction
from slurm_ext.policies.working_view import WorkingView
from slurm_ext.sim import Simulator
from slurm_ext.sim.registry import resolve
from slurm_ext.workloads.model import MalleableRule
from slurm_ext.workloads.synthetic import SyntheticConfig, generate
from tests.unit.slurm_ext.sim.bench_modules import load


def test_the_replay_gives_the_policys_schedule_and_a_lost_answer_changes_it() -> None:
    child = load("malleable_child")
    wl = MalleableRule(fraction=0.5, seed=0).apply(
        generate(SyntheticConfig(jobs=400, nodes=64, seed=1, load=0.8))
    )
    r = resolve("dbes")
    want, answers = child.replay_floor(wl, r, Simulator(wl, r.scheduler, r.policy))
    replay = child.NoSnapshot(wl, r.scheduler, answers)
    replay.run()
    assert child.schedule(replay) == want

    r = resolve("dbes")
    want, answers = child.replay_floor(wl, r, Simulator(wl, r.scheduler, r.policy))
    replay = child.NoSnapshot(wl, r.scheduler, answers)
    said = replay.policy.said
    k = next(
        k for k, (kind, d) in enumerate(said) if kind == "decide" and any(type(x) is not NoAction for x in d)
    )
    said[k] = ("decide", [])  # one acting call now decides nothing
    replay.run()
    assert child.schedule(replay) != want


@pytest.mark.parametrize("name", ["dbes", "sd"])  # DBES has calls skipped on its word, SD none
def test_the_bound_replay_is_called_at_every_call_and_gives_the_policys_schedule(name: str) -> None:
    child = load("malleable_child")
    wl = MalleableRule(fraction=0.5, seed=0).apply(
        generate(SyntheticConfig(jobs=400, nodes=64, seed=1, load=0.8))
    )
    r = resolve(name)
    calls = [0]
    plan = r.policy.plan  # the simulator calls a view policy's plan (no snapshot)

    def counted(cl, asking=None):  # type: ignore[no-untyped-def]
        calls[0] += 1
        return plan(cl, asking)

    r.policy.plan = counted  # type: ignore[method-assign]
    want, answers = child.replay_floor(wl, r, Simulator(wl, r.scheduler, r.policy))
    bound = child.view_replay(r.policy, answers.said)
    views = [0]
    real = bound.plan

    def seen(cl, asking=None):  # type: ignore[no-untyped-def]
        assert isinstance(cl, WorkingView)
        views[0] += 1
        return real(cl, asking)

    bound.plan = seen  # type: ignore[method-assign]
    sim = Simulator(wl, r.scheduler, bound)
    sim.run()
    assert child.schedule(sim) == want
    assert views[0] == calls[0] > 0  # none skipped: a working copy wherever the policy had one
    assert not bound.said
