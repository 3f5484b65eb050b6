"""Experiment 1: the fast method equals re-simulating the whole trace per target, for any
number of worker processes; memory per target is one row; each run stops at its target."""

from __future__ import annotations

import pytest

from ejb.experiments.one_elastic import baseline, one_elastic, select_targets, targets_of
from ejb.experiments.target_rows import RowStore, RowWriter, TargetRow
from ejb.experiments.target_runs import Runner, chunks, run_parallel
from ejb.params import EJBParams
from slurm_ext.workloads import bundled_trace_path, load_swf


@pytest.fixture(scope="module")
def small():
    return load_swf(bundled_trace_path())


@pytest.mark.parametrize("params", [EJBParams(), EJBParams(o_max=4, migration=300.0, delta=1.5)])
def test_fast_method_equals_copy_and_naive_methods(small, params):
    fast = list(one_elastic(small, params, method="fast").rows)
    copy = list(one_elastic(small, params, method="copy").rows)
    naive = list(one_elastic(small, params, method="naive").rows)
    assert len(fast) >= 20  # the trace has enough waiting large jobs to mean something
    assert fast == copy == naive


@pytest.mark.parametrize(("workers", "chunk"), [(2, 1), (2, 3), (3, 5)])
def test_rows_do_not_depend_on_workers_or_chunks(small, workers, chunk):
    serial = list(one_elastic(small, workers=1).rows)
    parallel = list(one_elastic(small, workers=workers, chunk=chunk).rows)
    assert parallel == serial
    assert [r.job_id for r in parallel] == select_targets(baseline(small), EJBParams())


def test_a_worker_handed_an_earlier_chunk_starts_over(small):
    base = baseline(small)
    targets = targets_of(base, select_targets(base, EJBParams()))
    runner = Runner(small, EJBParams())
    late_first = [runner.run(t) for t in [targets[-1], *targets[:3]]]
    fresh = list(run_parallel(small, EJBParams(), [targets[-1], *targets[:3]], workers=1))
    assert late_first == fresh


def test_each_run_stops_when_its_target_completes(small):
    base = baseline(small)
    t = targets_of(base, select_targets(base, EJBParams()))[3]
    runner = Runner(small, EJBParams(), method="copy")
    runner.sim.advance(until=t.submit)
    sim = runner.sim.copy()
    from ejb.experiments.target_runs import _controller

    ctrl = _controller(EJBParams(), t.job_id, stop=True)
    sim.attach(ctrl)
    sim.advance()
    rec = ctrl.records()[t.job_id]
    assert sim.now == pytest.approx(rec.completed)  # nothing after the target's completion
    assert sim.arrived < len(small.jobs)  # later arrivals were never simulated


def test_targets_are_large_waiting_jobs_inside_the_window(small):
    base = baseline(small)
    ids = select_targets(base, EJBParams())
    k = {int(j): i for i, j in enumerate(base.job_id)}
    first_kept = int(len(base.job_id) * 0.01)
    for jid in ids:
        i = k[jid]
        assert base.size[i] >= 8 and base.start[i] > base.submit[i]
        assert i >= first_kept and base.end[i] <= base.submit.max()


def test_ejb_helps_targets_on_the_small_trace(small):
    r = one_elastic(small)
    assert r.wait.change < 0  # subjobs start in idle slots: waits shrink
    assert r.run.change > 0  # over-subscription and migration lengthen runs


def test_rows_stream_to_the_sink_in_order_and_keep_little(small, tmp_path):
    seen: list[TargetRow] = []
    progress: list[tuple[int, int]] = []
    r = one_elastic(small, sink=seen.append, progress=lambda d, n: progress.append((d, n)))
    assert seen == list(r.rows)
    assert progress[0] == (0, len(seen)) and progress[-1] == (len(seen), len(seen))
    assert r.rows.nbytes() <= 13 * 8 * len(seen)  # one row of plain numbers per target
    with RowWriter(tmp_path / "rows.csv") as write:
        for row in seen:
            write(row)
    lines = (tmp_path / "rows.csv").read_text().splitlines()
    assert len(lines) == len(seen) + 1 and lines[0].startswith("job_id,procs")


def test_row_store_round_trip():
    store = RowStore()
    rows = [TargetRow(k, 8, 100.0, 50.0, 10.0, 50.0, 1.0, 70.0, 2, 1, 5.0, 900.0, 0) for k in range(3)]
    for row in rows:
        store.append(row)
    assert list(store) == rows and len(store) == 3
    assert store.column("wait").tolist() == [1.0] * 3


def test_chunks_cover_targets_in_order():
    assert chunks(list(range(7)), 3) == [[0, 1, 2], [3, 4, 5], [6]]


def test_target_rules_differ_by_the_jobs_of_exactly_min_procs(small):
    base = baseline(small)
    size = {int(j): int(s) for j, s in zip(base.job_id, base.size, strict=True)}
    text = select_targets(base, EJBParams(), rule="text")
    table3 = select_targets(base, EJBParams(), rule="table3")
    assert set(table3) < set(text)
    assert {j for j in text if j not in table3} == {j for j in text if size[j] == 8}
    assert all(size[j] > 8 for j in table3)
    with pytest.raises(ValueError, match="target rule"):
        select_targets(base, EJBParams(), rule="paper")


def test_table3_names_the_rule(small):
    from ejb.experiments.report import table3_text

    assert "P > 8" in table3_text(one_elastic(small, max_targets=5))
    assert "P >= 8" in table3_text(one_elastic(small, max_targets=5, rule="text"))


def test_an_error_in_a_worker_reaches_the_caller(small, monkeypatch):
    from ejb.experiments import target_runs

    base = baseline(small)
    targets = targets_of(base, select_targets(base, EJBParams()))
    bad = targets[7].job_id
    real = target_runs.Runner.run

    def run(self, t):
        if t.job_id == bad:
            raise target_runs.TargetNeverCompleted(f"target job {t.job_id} never completed under EJB")
        return real(self, t)

    monkeypatch.setattr(target_runs.Runner, "run", run)  # inherited by the forked workers
    with pytest.raises(target_runs.TargetNeverCompleted, match=str(bad)):
        list(run_parallel(small, EJBParams(), targets, workers=2, chunk=2))


@pytest.mark.parametrize("method", ["copy", "naive"])
def test_each_runs_simulator_is_freed_without_the_garbage_collector(small, method, monkeypatch):
    import gc
    import weakref

    from slurm_ext.sim import Simulator

    refs: list[weakref.ref] = []
    real_attach = Simulator.attach

    def attach(self, controller):
        refs.append(weakref.ref(self))
        real_attach(self, controller)

    monkeypatch.setattr(Simulator, "attach", attach)
    base = baseline(small)
    targets = targets_of(base, select_targets(base, EJBParams()))[:4]
    runner = Runner(small, EJBParams(), method=method)
    gc.collect()
    gc.disable()
    try:
        for t in targets:
            runner.run(t)
        assert len(refs) == 4 and all(r() is None for r in refs)  # sim <-> controller cycle broken
    finally:
        gc.enable()
