"""Experiment 2 (section 6.4, Tables 5 and 6, Figures 10 and 11): all eligible jobs elastic.

Every job with ``P >= min_procs`` is submitted to EJB (Figure 9: it becomes elastic only if
its ``J_0`` cannot start at once). The trace is simulated twice, before (EASY only) and after
(EASY + EJB), and each job's metrics are paired: elastic jobs, non-elastic jobs, all jobs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ejb.params import EJBParams
from ejb.sim_driver import EJBController, ElasticRecord
from slurm_ext.metrics import Z975, PairedChange, bounded_slowdown, paired, window_mask
from slurm_ext.sim import Simulator, Workload
from slurm_ext.sim.result import SimResult

GROUPS = ("elastic", "non-elastic", "all")


@dataclass(frozen=True, slots=True)
class Group:
    name: str
    n: int
    turnaround: PairedChange
    wait: PairedChange
    run: PairedChange
    slowdown: PairedChange

    def metrics(self) -> dict[str, PairedChange]:
        """The paired comparisons by metric name (as in the CSV and JSON outputs)."""
        return {
            "turnaround": self.turnaround,
            "wait": self.wait,
            "run": self.run,
            "bounded_slowdown": self.slowdown,
        }


@dataclass
class AllElasticResult:
    workload: str
    params: EJBParams
    groups: dict[str, Group]
    fragmentation: tuple[float, float]  # mean idle processors while the queue is non-empty
    nodes: int
    records: list[ElasticRecord]  # elastic jobs inside the window
    fairness: tuple[float, float]  # slope of wait over job size, before and after
    seconds: float
    size: np.ndarray  # per job in the window, for plots
    wait_before: np.ndarray
    wait_after: np.ndarray

    def table4(self) -> dict[str, float]:
        """Subjobs and migrations per elastic job, migration share of run time, resource overhead."""
        return table4(self.records)


def table4(records: list[ElasticRecord]) -> dict[str, float]:
    """Table 4, as per-job means: subjobs and migrations per elastic job, migration time as a
    share of the job's run time, and the extra processor-time over ``P_t x R_act``.

    The paper's "on average" figures match means of per-job ratios (short jobs weigh as much
    as long ones); the ratios of the totals are given too (``*_total``).
    """
    if not records:
        return table4_columns(*(np.zeros(0) for _ in range(6)))
    return table4_columns(
        np.array([r.run for r in records]),
        np.array([r.migration_time for r in records]),
        np.array([r.procs * r.run_time for r in records]),
        np.array([r.proc_seconds for r in records]),
        np.array([r.subjobs for r in records]),
        np.array([r.migrations for r in records]),
    )


def table4_columns(
    run: np.ndarray,
    mig: np.ndarray,
    base: np.ndarray,
    held: np.ndarray,
    subjobs: np.ndarray,
    migrations: np.ndarray,
) -> dict[str, float]:
    """:func:`table4` from columns: run time, migration time, ``P_t x R_act``, processor-seconds
    held, subjobs and migrations per elastic job."""
    keys = ("subjobs", "migrations", "migration_share", "resource_overhead")
    if len(run) == 0:
        return dict.fromkeys((*keys, "migration_share_total", "resource_overhead_total"), 0.0)
    ok = run > 0
    return {
        "subjobs": float(np.mean(subjobs)),
        "migrations": float(np.mean(migrations)),
        "migration_share": float(np.mean(mig[ok] / run[ok])) if ok.any() else 0.0,
        "resource_overhead": float(np.mean(held / base - 1.0)),
        "migration_share_total": float(mig.sum() / run.sum()) if run.sum() else 0.0,
        "resource_overhead_total": float(held.sum() / base.sum() - 1.0),
    }


def fragmentation(result: SimResult, t0: float, t1: float) -> float:
    """Mean idle processors over ``[t0, t1]`` while the batch queue is not empty (section 6.1)."""
    tl = result.timeline
    times, busy, queued = tl["time"], tl["busy"], tl["queued"]
    if len(times) < 2:
        return 0.0
    # state after the last step of an instant holds until the next instant
    nxt = np.append(times[1:], times[-1])
    a = np.clip(times, t0, t1)
    b = np.clip(nxt, t0, t1)
    dt = b - a
    waiting = queued > 0
    total = float((dt * waiting).sum())
    idle = float(((result.nodes - busy) * dt * waiting).sum())
    return idle / total if total > 0 else 0.0


def all_elastic(
    workload: Workload,
    params: EJBParams | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> AllElasticResult:
    params = params or EJBParams()
    t_start = time.perf_counter()
    before = Simulator(workload, "easy").run()
    ctrl = EJBController(params)
    sim = Simulator(workload, "easy", controller=ctrl)
    after = sim.run(progress=progress)
    records = ctrl.records()
    n = len(workload.jobs)
    ids = before.job_id[:n]
    submit = before.submit[:n]
    size = before.size[:n]
    b_start, b_end = before.start[:n], before.end[:n]
    a_start, a_end = after.start[:n].copy(), after.end[:n].copy()
    elastic = np.zeros(n, dtype=bool)
    for k, jid in enumerate(ids):
        rec = records.get(int(jid))
        if rec is not None:
            a_start[k], a_end[k] = rec.first_start, rec.completed
            elastic[k] = rec.elastic
    # kept if in the measurement window of both runs
    keep = window_mask(submit, b_end) & window_mask(submit, a_end)
    b_tt, a_tt = b_end - submit, a_end - submit
    b_tw, a_tw = b_start - submit, a_start - submit
    b_tr = b_end - b_start
    a_tr = a_end - a_start
    groups: dict[str, Group] = {}
    for name, mask in (("elastic", elastic), ("non-elastic", ~elastic), ("all", np.ones(n, dtype=bool))):
        m = keep & mask
        groups[name] = Group(
            name,
            int(m.sum()),
            paired(b_tt[m], a_tt[m], z=Z975),
            paired(b_tw[m], a_tw[m], z=Z975),
            paired(b_tr[m], a_tr[m], z=Z975),
            # eq. (5): both runs over the baseline run time, no floor of 1
            paired(
                bounded_slowdown(b_tt[m], b_tr[m], floor=0.0),
                bounded_slowdown(a_tt[m], b_tr[m], floor=0.0),
                z=Z975,
            ),
        )
    first_kept = int(np.argmax(keep)) if keep.any() else 0
    t0, t1 = float(submit[first_kept]), float(submit.max())
    frag = (fragmentation(before, t0, t1), fragmentation(after, t0, t1))
    slope_b = float(np.polyfit(size[keep], b_tw[keep], 1)[0]) if keep.sum() > 1 else 0.0
    slope_a = float(np.polyfit(size[keep], a_tw[keep], 1)[0]) if keep.sum() > 1 else 0.0
    kept_records = [records[int(j)] for j in ids[keep & elastic]]
    return AllElasticResult(
        workload.name,
        params,
        groups,
        frag,
        workload.nodes,
        kept_records,
        (slope_b, slope_a),
        time.perf_counter() - t_start,
        size[keep],
        b_tw[keep],
        a_tw[keep],
    )
