"""Reproduce the seed papers' policy comparisons in the simulator, next to the papers' numbers.

1. ``000_*`` Figs. 4 and 7, Table II: ``slurm-ext reproduce dbes`` (:mod:`slurm_ext.reproduce.dbes`),
   printed here first.
3. ``001_*``: minAgree with 100% malleable jobs against FCFS with 100% rigid jobs (makespan
   -13.09%), on 001-style job batches (32 nodes, 25 jobs, ~8 node-hours, submitted within
   10 minutes) and on the ESP workload.
4. ``001_*`` Figs. 9-11: makespan, node utilisation and turnaround of its four schedulers
   (moldable FCFS, Backfilling, Easy-Backfilling; minAgree) as the moldable/malleable share of
   the batches grows from 0 to 100%, next to the paper's end points.

Every run goes through ``slurm_ext.sim.Simulator`` with ``strict=True`` (a decision the
simulated cluster cannot carry out aborts the run). Self-scheduling policies run with the
base scheduler ``none``; FCFS/EASY baselines use the simulator's own passes.

    python benchmarks/bench_policies.py            # 3 ESP seeds, 10 batches
    python benchmarks/bench_policies.py --seeds 1  # quicker
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from slurm_ext.model import MalleableSpec
from slurm_ext.policies import make_policy
from slurm_ext.reproduce.dbes import fig4, fig7, makespan, markdown
from slurm_ext.sim import SimJob, Simulator, Workload
from slurm_ext.workloads.esp import esp_workload

# 001_* "Makespan and Node Utilization"
PAPER_001 = {"fcfs_rigid": 1157.46, "minagree_100": 1006.13, "reduction": 0.1309}
OVERHEAD_001 = (14.55 + 7.41) / 2  # 001_* Fig. 7: mean grow and shrink times, seconds


def batch_001(seed: int, malleable: bool | float) -> Workload:
    """A 001_*-style batch. 001_* Table 2 (programs, node ranges, probabilities) is an image
    not in our copy of the paper; what its text gives is kept: 32 nodes, 25 jobs, about 8
    node-hours, node ranges within the strong-scaling range 1..16, the first five jobs at
    time 0 and the rest uniform in [0, 600) s, malleable batches made from the same rigid
    batch. Rigid sizes and the range rule [n/2, 2n] are this reconstruction's choice.
    ``malleable``: all jobs or none, or the share of jobs given a range (the same jobs' ranges
    at every share: the first of a seeded shuffle)."""
    rng = random.Random(seed)
    share = float(malleable)
    flexible = set(random.Random(seed + 1000).sample(range(1, 26), round(25 * share)))
    jobs = []
    for jid in range(1, 26):
        nodes = rng.choices((2, 4, 8, 16), weights=(3, 4, 3, 1))[0]
        run = rng.uniform(0.4, 1.6) * 8 * 3600 / 25 / nodes  # ~8 node-hours in all
        submit = 0.0 if jid <= 5 else rng.uniform(0, 600)
        spec = MalleableSpec(max(1, nodes // 2), min(16, nodes * 2)) if jid in flexible else None
        jobs.append(SimJob(jid, submit, nodes, run, run, malleable=spec, name="glb"))
    return Workload(jobs, 32, f"001-batch-{seed}-{share:.0%}")


def minagree_vs_fcfs(batches: int, esp_seeds: int) -> None:
    print(f"\n== 001_*: minAgree with 100% malleable jobs vs FCFS with 100% rigid jobs ({batches} batches)")
    for overhead in (0.0, OVERHEAD_001):
        rigid = [makespan(batch_001(s, False), "fcfs")[0] for s in range(batches)]
        easy = [makespan(batch_001(s, False), "easy-sim")[0] for s in range(batches)]
        mall = [makespan(batch_001(s, True), "minagree", overhead=overhead)[0] for s in range(batches)]
        fr, fe, fm = statistics.fmean(rigid), statistics.fmean(easy), statistics.fmean(mall)
        print(
            f"resize overhead {overhead:5.2f} s: FCFS rigid {fr:7.1f} s, EASY rigid {fe:7.1f} s, "
            f"minAgree 100% {fm:7.1f} s -> {fm / fr - 1:+.1%} vs FCFS"
        )
    print(
        f"paper: FCFS rigid {PAPER_001['fcfs_rigid']:.2f} s, minAgree 100% {PAPER_001['minagree_100']:.2f} s"
        f" -> -{PAPER_001['reduction']:.2%}"
    )
    rig = statistics.fmean(makespan(esp_workload(1.0, seed=s), "fcfs")[0] for s in range(esp_seeds))
    mal = statistics.fmean(makespan(esp_workload(1.0, seed=s), "minagree")[0] for s in range(esp_seeds))
    print(
        f"modified ESP (100% malleable): FCFS rigid {rig:.0f} s, minAgree {mal:.0f} s -> {mal / rig - 1:+.1%}"
    )


# 001_* "Makespan and Node Utilization" / "Job Turnaround Time": (0% flexible, 100% flexible)
PAPER_001_SWEEP = {
    "moldable-fcfs": {
        "makespan": (1157.46, 1021.68), "utilisation": (75.52, 88.18), "turnaround": (366.20, 306.31),
    },
    "moldable-backfill": {
        "makespan": (1035.23, 1005.2), "utilisation": (84.45, 89.54), "turnaround": (284.41, 281.86),
    },
    "moldable-easy": {"makespan": (1171.95, 1014.40), "utilisation": (74.83, 88.75)},
    "minagree": {"makespan": (1168.0, 1006.13), "utilisation": (74.78, 90.52)},
}  # fmt: skip
SHARES_001 = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)


def sweep_001(batches: int) -> None:
    """001's Figs. 9-11: each scheduler on the same batches at each flexible share."""
    print(f"\n== 001_* Figs. 9-11: its four schedulers vs the moldable/malleable share ({batches} batches)")
    print(
        f"{'scheduler':>17} {'metric':>11} "
        + " ".join(f"{s:>7.0%}" for s in SHARES_001)
        + "   paper 0% -> 100%"
    )
    for name, paper in PAPER_001_SWEEP.items():
        rows: dict[str, list[float]] = {"makespan": [], "utilisation": [], "turnaround": []}
        for share in SHARES_001:
            spans, utils, turns = [], [], []
            for seed in range(batches):
                res = Simulator(batch_001(seed, share), "none", make_policy(name), strict=True).run()
                span = float(res.end.max() - res.submit.min())
                spans.append(span)
                utils.append(100 * res.busy_area / (32 * span))
                turns.append(float((res.end - res.submit).mean()))
            rows["makespan"].append(statistics.fmean(spans))
            rows["utilisation"].append(statistics.fmean(utils))
            rows["turnaround"].append(statistics.fmean(turns))
        for metric, values in rows.items():
            lo_hi = paper.get(metric)
            quoted = (
                ""
                if lo_hi is None
                else f"   {lo_hi[0]:.1f} -> {lo_hi[1]:.1f} ({lo_hi[1] / lo_hi[0] - 1:+.1%})"
            )
            here = f" ({values[-1] / values[0] - 1:+.1%})"
            print(f"{name:>17} {metric:>11} " + " ".join(f"{v:7.1f}" for v in values) + here + quoted)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3, help="ESP submission orders averaged (default 3)")
    ap.add_argument("--batches", type=int, default=10, help="001-style batches (default 10, as in 001_*)")
    args = ap.parse_args()
    t0 = time.perf_counter()
    print(markdown(fig4(args.seeds, lambda: None), fig7(args.seeds, lambda: None), args.seeds))
    minagree_vs_fcfs(args.batches, args.seeds)
    sweep_001(args.batches)
    print(f"\nwall time {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
