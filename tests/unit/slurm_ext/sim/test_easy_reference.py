"""The textbook EASY loop of ``benchmarks/easy_reference.py`` (the speed reference) and the
simulator's EASY give the same schedule, so timing one against the other is fair."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from slurm_ext.sim import Simulator
from slurm_ext.workloads import load_workload
from slurm_ext.workloads.synthetic import SyntheticConfig, generate

REFERENCE = Path(__file__).resolve().parents[4] / "benchmarks" / "easy_reference.py"


def _easy_starts():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("easy_reference", REFERENCE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.easy_starts


@pytest.mark.parametrize("source", ["kth-small", "synthetic"])
def test_reference_schedule_is_the_simulators(source: str) -> None:
    if source == "synthetic":
        wl = generate(SyntheticConfig(jobs=3000, nodes=64, seed=3, load=0.9))
    else:
        wl = load_workload(source)
    starts = _easy_starts()(wl)
    assert starts == Simulator(wl, "easy").run().start.tolist()
