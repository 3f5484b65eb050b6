"""``bench_malleable.py --floor``: the replayed answers give the policy's schedule, and a replay
that lost one answer does not (so the benchmark's equality check can fail)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from slurm_ext.decisions import NoAction
from slurm_ext.sim import Simulator
from slurm_ext.sim.registry import resolve
from slurm_ext.workloads.model import MalleableRule
from slurm_ext.workloads.synthetic import SyntheticConfig, generate

CHILD = Path(__file__).resolve().parents[4] / "benchmarks" / "malleable_child.py"


def _child() -> ModuleType:
    spec = importlib.util.spec_from_file_location("malleable_child", CHILD)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_replay_gives_the_policys_schedule_and_a_lost_answer_changes_it() -> None:
    child = _child()
    wl = MalleableRule(fraction=0.5, seed=0).apply(
        generate(SyntheticConfig(jobs=400, nodes=64, seed=1, load=0.8))
    )
    r = resolve("dbes")
    want, replay = child.replay_floor(wl, r, Simulator(wl, r.scheduler, r.policy))
    replay.run()
    assert child.schedule(replay) == want

    r = resolve("dbes")
    want, replay = child.replay_floor(wl, r, Simulator(wl, r.scheduler, r.policy))
    said = replay.policy.said
    k = next(
        k for k, (kind, d) in enumerate(said) if kind == "decide" and any(type(x) is not NoAction for x in d)
    )
    said[k] = ("decide", [])  # one acting call now decides nothing
    replay.run()
    assert child.schedule(replay) != want
