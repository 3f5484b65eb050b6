"""Experiment 2 on the bundled 500-job trace: bookkeeping that must hold whatever the numbers."""

from __future__ import annotations

import numpy as np
import pytest

from ejb.experiments.all_elastic import all_elastic, fragmentation, table4
from ejb.params import EJBParams
from ejb.sim_driver import EJBController
from slurm_ext.metrics import paired, window_mask
from slurm_ext.sim import Simulator
from slurm_ext.workloads import bundled_trace_path, load_swf


@pytest.fixture(scope="module")
def small():
    return load_swf(bundled_trace_path())


@pytest.fixture(scope="module")
def result(small):
    return all_elastic(small)


def test_groups_partition_the_window(result):
    g = result.groups
    assert g["elastic"].n + g["non-elastic"].n == g["all"].n > 400
    assert g["elastic"].n > 20


def test_non_elastic_run_times_are_unchanged(result):
    run = result.groups["non-elastic"].run
    assert run.after == pytest.approx(run.before)


def test_ejb_reduces_fragmentation_and_elastic_waits(result):
    before, after = result.fragmentation
    assert after < before
    assert result.groups["elastic"].wait.change < 0


def test_every_target_completes_and_subjobs_never_outlive_it(small):
    ctrl = EJBController(EJBParams())
    sim = Simulator(small, "easy", controller=ctrl)
    res = sim.run()
    records = ctrl.records()
    assert len(records) == len(ctrl.ejb.jobs)  # every elastic job completed
    for eid, ej in ctrl.ejb.jobs.items():
        for sj in ej.subjobs.values():
            assert sj.stop is not None and sj.stop <= records[eid].completed + 1e-6
    # the machine never held more than its processors (the simulator would have raised), and
    # every subjob the scheduler saw started at once: no pending subjob was ever cancelled
    subs = res.job_id > max(j.job_id for j in small.jobs)
    assert (res.start[subs] == res.submit[subs]).all()


def test_fragmentation_of_a_known_timeline():
    class R:
        nodes = 10
        timeline = {
            "time": np.array([0.0, 10.0, 20.0, 30.0]),
            "busy": np.array([4, 10, 6, 6]),
            "queued": np.array([1, 1, 0, 0]),
        }

    # idle 6 for 10 s with a queue, 0 for 10 s with a queue, then no queue
    assert fragmentation(R(), 0.0, 30.0) == pytest.approx(3.0)


def test_warmup_and_cooldown_exclusion():
    submit = np.arange(200, dtype=float)
    end = submit.copy()
    end[-3:] = 1000  # end after the last arrival
    keep = window_mask(submit, end)
    assert not keep[:2].any() and keep[2:-3].all() and not keep[-3:].any()


def test_paired_ci_excludes_zero_only_for_real_changes():
    rng = np.random.default_rng(0)
    before = rng.uniform(100, 200, 500)
    assert paired(before, before - 50).significant
    assert not paired(before, before + rng.normal(0, 1, 500)).significant


def test_table4_means_of_per_job_ratios(result):
    t = table4(result.records)
    assert t["subjobs"] >= 1.0
    assert 0.0 <= t["migration_share"] < 1.0
