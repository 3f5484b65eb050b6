"""Experiment 1's fast exact method equals re-simulating the whole trace per target."""

from __future__ import annotations

import pytest

from ejb.experiments.one_elastic import baseline, one_elastic, select_targets
from ejb.params import EJBParams
from slurm_ext.workloads import bundled_trace_path, load_swf


@pytest.fixture(scope="module")
def small():
    return load_swf(bundled_trace_path())


@pytest.mark.parametrize("params", [EJBParams(), EJBParams(o_max=4, migration=300.0, delta=1.5)])
def test_fast_method_equals_naive_method(small, params):
    fast = one_elastic(small, params, method="fast")
    naive = one_elastic(small, params, method="naive")
    assert len(fast.outcomes) >= 20  # the trace has enough waiting large jobs to mean something
    assert [o.record for o in fast.outcomes] == [o.record for o in naive.outcomes]


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
