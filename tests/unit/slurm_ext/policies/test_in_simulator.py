"""Every policy driven by the project's simulator in strict mode on random workloads: each
decision list must be carried out without a rejection, and every job must finish."""

import random

import pytest

from slurm_ext.model import MalleableSpec
from slurm_ext.policies import make_policy
from slurm_ext.sim import SimJob, Simulator, Workload

SELF_SCHEDULING = ["dbes", "ep", "esf", "edf", "ldf", "minagree", "sd", "sd-dynamic", "backfill", "easy",
                   "moldable-fcfs", "moldable-backfill", "moldable-easy"]  # fmt: skip


def _workload(seed: int, n: int = 60, total: int = 16) -> Workload:
    rng = random.Random(seed)
    jobs, t = [], 0.0
    for jid in range(1, n + 1):
        t += rng.expovariate(1 / 40)
        size = rng.choice([1, 2, 3, 4, 6, 8])
        limit = rng.uniform(50, 600)
        run = limit * rng.uniform(0.3, 1.0)
        mall = MalleableSpec(size, min(total, 3 * size)) if rng.random() < 0.6 else None
        jobs.append(SimJob(jid, t, size, limit, run, malleable=mall))
    return Workload(jobs, total, f"random-{seed}")


@pytest.mark.parametrize("name", SELF_SCHEDULING)
@pytest.mark.parametrize("seed", [1, 2])
def test_policy_runs_a_whole_workload_without_rejected_decisions(name: str, seed: int) -> None:
    wl = _workload(seed)
    res = Simulator(wl, "none", make_policy(name), strict=True).run()
    assert (res.end >= 0).all(), f"{name}: not every job finished"
    assert res.rejected == []
    assert (res.state == "COMPLETED").all()


def test_malleable_policies_actually_resize() -> None:
    wl = _workload(3)
    for name in ("dbes", "ep", "minagree"):
        res = Simulator(wl, "none", make_policy(name), strict=True).run()
        assert res.resizes.sum() > 0, name
    res = Simulator(wl, "none", make_policy("backfill"), strict=True).run()
    assert res.resizes.sum() == 0


@pytest.mark.parametrize("name", ["dbes", "ep", "ldf", "minagree", "backfill"])
def test_evolving_esp_mix_runs_strict(name: str) -> None:
    from slurm_ext.workloads.esp import esp_workload

    wl = esp_workload(0.4, 0.1)
    res = Simulator(wl, "none", make_policy(name), strict=True).run()
    assert (res.state == "COMPLETED").all() and res.rejected == []
    evolving = {j.job_id for j in wl.jobs if j.evolving}
    grown = {int(i) for i, n0, n1 in zip(res.job_id, res.size, res.final_size, strict=True) if n1 > n0}
    assert grown & evolving, f"{name}: no evolving request was granted"


def test_moldable_easy_on_rigid_jobs_is_easy() -> None:
    """001's moldable extension changes nothing for rigid jobs: every start as EASY's."""
    rigid = Workload([j._replace(malleable=None) for j in _workload(4).jobs], 16, "rigid")
    easy = Simulator(rigid, "none", make_policy("easy"), strict=True).run()
    moldable = Simulator(rigid, "none", make_policy("moldable-easy"), strict=True).run()
    assert (moldable.start == easy.start).all()


def test_moldable_starts_change_sizes_and_never_resize() -> None:
    wl = _workload(5)
    res = Simulator(wl, "none", make_policy("moldable-easy"), strict=True).run()
    assert res.resizes.sum() == 0
    assert (res.final_size != res.size).any()  # started on another size than submitted
