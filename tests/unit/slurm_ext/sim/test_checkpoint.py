"""A checkpoint restores the simulator exactly, in time proportional to what a run changed."""

from __future__ import annotations

import math

import pytest

from ejb.params import EJBParams
from ejb.sim_driver import EJBController
from slurm_ext.sim import Simulator
from slurm_ext.sim.checkpoint import KNOWN, CheckpointError, checkpoint, restore
from slurm_ext.sim.jobtable import JobTable
from slurm_ext.sim.snapshot import SnapshotCache
from slurm_ext.workloads import bundled_trace_path, load_swf
from slurm_ext.workloads.synthetic import SyntheticConfig, generate

IGNORED = {"wall_time", "controller"}  # a timing counter; the controller is detached on restore


def state(sim: Simulator) -> dict[str, object]:
    out = {k: v for k, v in sim.__dict__.items() if k not in IGNORED and k != "events"}
    out["events"] = (list(sim.events.heap), sim.events.seq)
    for k, v in out.items():
        if isinstance(v, JobTable):
            out[k] = {name: col.copy() for name, col in v.columns().items()}
        elif hasattr(v, "tolist"):
            out[k] = v.tolist()
        elif isinstance(v, list | dict | set | SnapshotCache):
            out[k] = v.copy()  # the run mutates the containers themselves
    return out


def equal(a: dict[str, object], b: dict[str, object]) -> list[str]:
    return [k for k in a if a[k] != b[k] and not (isinstance(a[k], float) and math.isnan(a[k]))]


@pytest.mark.parametrize(
    "workload",
    [
        load_swf(bundled_trace_path()),
        generate(SyntheticConfig(jobs=600, nodes=64, seed=3, load=0.9)),
    ],
    ids=["kth-500", "synthetic"],
)
def test_run_then_restore_gives_back_the_baseline_state(workload) -> None:
    runner = Simulator(workload, "easy", record_timeline=True)  # exercises the append-only arrays
    big = [j for j in workload.jobs if j.nodes >= 8]
    checked = 0
    for job in big[5::7]:
        runner.advance(until=job.submit)
        before = state(runner)
        reference = runner.copy()
        cp = checkpoint(runner)
        ctrl = EJBController(
            EJBParams(), select=lambda jid, _p, t=job.job_id: jid == t, stop_after=[job.job_id]
        )
        runner.attach(ctrl)
        runner.advance()
        assert len(runner.jid) >= len(reference.jid)  # the run did happen (it may add subjobs)
        restore(runner, cp)
        assert equal(before, state(runner)) == []
        assert equal(state(reference), state(runner)) == []
        checked += 1
    assert checked >= 5
    # The restored runner still finishes exactly like a plain baseline run.
    assert runner.run().end.tolist() == Simulator(workload, "easy", record_timeline=False).run().end.tolist()


def test_every_simulator_field_is_classified() -> None:
    sim = Simulator(load_swf(bundled_trace_path()), "easy")
    assert set(sim.__dict__) <= KNOWN


def test_checkpoint_refuses_what_it_cannot_restore() -> None:
    sim = Simulator(load_swf(bundled_trace_path()), "easy")
    sim.extra_field = 1  # type: ignore[attr-defined]
    with pytest.raises(CheckpointError, match="extra_field"):
        checkpoint(sim)
    sim2 = Simulator(load_swf(bundled_trace_path()), "easy")
    cp = checkpoint(sim2)
    restore(sim2, cp)
    with pytest.raises(CheckpointError, match="once"):
        restore(sim2, cp)
