"""Plots of simulated runs (matplotlib, Agg backend: files only, no display needed).

- :func:`plot_timeline`: allocated nodes and running/queued jobs over time (like ``002_*`` Fig. 6).
- :func:`plot_gantt`: one bar per job over time and nodes, for small workloads.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from slurm_ext.sim.result import SimResult  # noqa: E402

GANTT_MAX_JOBS = 500


def plot_timeline(result: SimResult, path: str | Path, title: str | None = None) -> Path:
    """Allocated nodes (with the machine size) and running/queued jobs as step functions."""
    tl = result.timeline
    t = tl["time"]
    if len(t) == 0:
        raise ValueError("the run has no timeline (record_timeline=False or no events)")
    hours = (t - t[0]) / 3600.0
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(10, 6), sharex=True)
    ax1.step(hours, tl["busy"], where="post", lw=0.8, label="allocated nodes")
    ax1.axhline(result.nodes, color="grey", ls="--", lw=0.8, label="machine")
    ax1.set_ylabel("nodes")
    ax1.set_ylim(0, result.nodes * 1.05)
    ax1.legend(loc="lower right", fontsize="small")
    ax2.step(hours, tl["running"], where="post", lw=0.8, label="running jobs")
    ax2.step(hours, tl["queued"], where="post", lw=0.8, label="queued jobs")
    ax2.set_ylabel("jobs")
    ax2.set_xlabel("hours since first event")
    ax2.legend(loc="upper right", fontsize="small")
    ax1.set_title(title or f"{result.workload}: {result.policy or result.scheduler}")
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


def _pack(starts: np.ndarray, ends: np.ndarray, sizes: np.ndarray, nodes: int) -> np.ndarray:
    """A first node index per job so that bars never overlap (node identities are not simulated)."""
    free_at = np.zeros(nodes)
    first = np.zeros(len(starts), dtype=int)
    for k in np.argsort(starts, kind="stable"):
        n = int(sizes[k])
        for base in range(0, nodes - n + 1):
            if (free_at[base : base + n] <= starts[k]).all():
                break
        else:
            base = int(np.argmin(free_at))  # only when sizes changed over the run
        first[k] = base
        free_at[base : base + n] = ends[k]
    return first


def _segments(result: SimResult, fin: np.ndarray) -> list[list[tuple[float, float, int]]]:
    """Per finished job, its (from, to, nodes) pieces: one per size it ran at."""
    ids = result.job_id[fin].tolist()
    pos = {j: k for k, j in enumerate(ids)}
    starts, ends, sizes = result.start[fin], result.end[fin], result.size[fin]
    segs = [[(float(starts[k]), float(ends[k]), int(sizes[k]))] for k in range(len(ids))]
    for t, job, _old, new in result.resize_log:
        k = pos.get(job)
        if k is None:
            continue
        t0, t1, n = segs[k][-1]
        segs[k][-1] = (t0, t, n)
        segs[k].append((t, t1, new))
    return segs


def plot_gantt(result: SimResult, path: str | Path, max_jobs: int = GANTT_MAX_JOBS) -> Path:
    """Jobs as bars (time x nodes), blue rigid, orange malleable; a resized job is drawn as one
    piece per size on a row wide enough for its largest size. At most ``max_jobs`` jobs."""
    fin = result.finished
    if fin.sum() > max_jobs:
        raise ValueError(f"Gantt chart is for small workloads: {int(fin.sum())} jobs > {max_jobs}")
    segs = _segments(result, fin)
    s, e = result.start[fin], result.end[fin]
    widest = np.array([max(n for _, _, n in sg) for sg in segs], dtype=int)
    t0 = s.min() if len(s) else 0.0
    base = _pack(s, e, np.minimum(widest, result.nodes), result.nodes)
    fig, ax = plt.subplots(figsize=(10, 5))
    colors = np.where(result.malleable[fin], "tab:orange", "tab:blue")
    for k, pieces in enumerate(segs):
        for a, b, n in pieces:
            rect = plt.Rectangle(
                ((a - t0) / 3600.0, base[k]),
                (b - a) / 3600.0,
                n,
                facecolor=colors[k],
                edgecolor="black",
                lw=0.3,
            )
            ax.add_patch(rect)
    ax.set_xlim(0, max(1e-9, (e.max() - t0) / 3600.0) if len(e) else 1)
    ax.set_ylim(0, result.nodes)
    ax.set_xlabel("hours since first start")
    ax.set_ylabel("nodes")
    ax.set_title(f"{result.workload}: {result.policy or result.scheduler} (orange: malleable)")
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out
