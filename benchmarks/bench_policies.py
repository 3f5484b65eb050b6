"""Reproduce the seed papers' policy comparisons in the simulator, next to the papers' numbers.

1. ``000_*`` Fig. 4: time to complete the modified ESP workload (Table I) for 10..100%
   malleable jobs under rigid Maui backfilling, DBES, EP, ESF, EDF and LDF, with the
   quantitative claims of §V.B checked one by one.
2. ``000_*`` Fig. 7 / Table II: 10% evolving + 40% malleable + 50% rigid.
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
from slurm_ext.sim import SimJob, Simulator, Workload
from slurm_ext.workloads.esp import esp_workload

FRACTIONS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
STATE_OF_ART = ("ep", "esf", "edf", "ldf")
ESP_POLICIES = ("rigid", "dbes", *STATE_OF_ART)
RESERVATION_DEPTH = 5  # 000_* §V.A: every run used ReservationDepth 5

# 000_* §V.B/§V.C, quoted numbers (Fig. 4 itself is only a plot)
PAPER_DBES_VS_RIGID_100 = 0.32  # "about 32% higher throughput than rigid scheduling"
PAPER_DBES_VS_EP_100 = 0.07  # "about 7% higher throughput than ... EP"
PAPER_DBES_VS_LDF_EVOLVING = 0.06  # Fig. 7: "about 6% in comparison to ... LDF"
PAPER_TABLE_II = {"dbes": 11, "ep": 11, "esf": 13, "edf": 17, "ldf": 12}
# 001_* "Makespan and Node Utilization"
PAPER_001 = {"fcfs_rigid": 1157.46, "minagree_100": 1006.13, "reduction": 0.1309}
OVERHEAD_001 = (14.55 + 7.41) / 2  # 001_* Fig. 7: mean grow and shrink times, seconds


def makespan(wl: Workload, policy: str, *, overhead: float = 0.0) -> tuple[float, Simulator]:
    if policy in ("fcfs", "easy-sim"):
        sim = Simulator(wl, "fcfs" if policy == "fcfs" else "easy", None, strict=True)
    else:
        name = "backfill" if policy == "rigid" else policy
        opts = {"reservation_depth": RESERVATION_DEPTH} if name in ("backfill", "dbes", *STATE_OF_ART) else {}
        sim = Simulator(wl, "none", make_policy(name, **opts), strict=True, resize_overhead=overhead)
    res = sim.run()
    if not (res.end >= 0).all():
        raise RuntimeError(f"{policy}: not every job finished on {wl.name}")
    return float(res.end.max() - res.submit.min()), sim


def esp_sweep(seeds: int) -> dict[float, dict[str, float]]:
    table: dict[float, dict[str, float]] = {}
    for f in FRACTIONS:
        row: dict[str, list[float]] = {p: [] for p in ESP_POLICIES}
        for seed in range(seeds):
            wl = esp_workload(f, seed=seed)
            for p in ESP_POLICIES:
                row[p].append(makespan(wl, p)[0])
        table[f] = {p: statistics.fmean(v) for p, v in row.items()}
        print(".", end="", flush=True)
    print()
    return table


def gain(rigid: float, t: float) -> float:
    """Throughput gain of a run taking ``t`` over one taking ``rigid`` (same jobs)."""
    return rigid / t - 1.0


def print_esp(table: dict[float, dict[str, float]], seeds: int) -> None:
    print(f"\n== 000_* Fig. 4: modified ESP, 230 jobs on 120 cores, mean makespan [s] of {seeds} seed(s)")
    head = f"{'malleable':>9} " + " ".join(f"{p:>8}" for p in ESP_POLICIES) + "   best  DBES vs rigid"
    print(head)
    for f, row in table.items():
        best = min(row, key=row.__getitem__)
        cells = " ".join(f"{row[p]:8.0f}" for p in ESP_POLICIES)
        print(f"{f:9.0%} {cells}  {best:>5}  {gain(row['rigid'], row['dbes']):+13.1%}")
    total_work = sum(j.nodes * j.run_time for j in esp_workload().jobs) / 120
    print(f"(lower bound, all 120 cores busy all the time: {total_work:.0f} s)")

    def rank(f: float, p: str) -> int:
        others = sorted(STATE_OF_ART, key=table[f].__getitem__)
        return others.index(p) + 1

    r100 = table[1.0]
    best_other = min(STATE_OF_ART, key=r100.__getitem__)
    claims = [
        (
            "DBES best in every mix",
            "yes",
            str(all(min(r, key=r.__getitem__) == "dbes" for r in table.values())),
        ),
        (
            "DBES throughput over rigid at 100%",
            f"+{PAPER_DBES_VS_RIGID_100:.0%}",
            f"{gain(r100['rigid'], r100['dbes']):+.1%}",
        ),
        ("best state-of-the-art strategy at 100%", "EP", best_other.upper()),
        (
            "DBES throughput over EP at 100%",
            f"+{PAPER_DBES_VS_EP_100:.0%}",
            f"{gain(r100['ep'], r100['dbes']):+.1%}",
        ),
        (
            "EP rank among EP/ESF/EDF/LDF at 10%, 30% (4 = worst)",
            "4, 4",
            f"{rank(0.1, 'ep')}, {rank(0.3, 'ep')}",
        ),
        ("EP rank at 60% / 90%", "1 / 3", f"{rank(0.6, 'ep')} / {rank(0.9, 'ep')}"),
        ("ESF rank at 20% / 50%", "1 / 4", f"{rank(0.2, 'esf')} / {rank(0.5, 'esf')}"),
        ("EDF slower than rigid at 20%", "yes", str(table[0.2]["edf"] > table[0.2]["rigid"])),
        ("EP slower than rigid at 30%", "yes", str(table[0.3]["ep"] > table[0.3]["rigid"])),
        ("50% malleable slower than 40% under DBES", "yes", str(table[0.5]["dbes"] > table[0.4]["dbes"])),
    ]
    print(f"\n{'claim (000_* §V.B)':<55} {'paper':>8} {'here':>8}")
    for what, paper, here in claims:
        print(f"{what:<55} {paper:>8} {here:>8}")


def evolving_mix(seeds: int) -> None:
    print(f"\n== 000_* Fig. 7 / Table II: 10% evolving (F,G,H), 40% malleable (I,J,K,L), {seeds} seed(s)")
    print(f"{'policy':>8} {'makespan':>9} {'evolving served':>16} {'paper served':>13}")
    spans: dict[str, float] = {}
    for p in ("dbes", *STATE_OF_ART):
        ms, served = [], []
        for seed in range(seeds):
            wl = esp_workload(0.4, 0.1, seed=seed)
            m, sim = makespan(wl, p)
            ms.append(m)
            served.append(len(sim.evolve_granted))
        spans[p] = statistics.fmean(ms)
        print(f"{p:>8} {spans[p]:9.0f} {statistics.fmean(served):16.1f} {PAPER_TABLE_II[p]:13d}")
    best_other = min(STATE_OF_ART, key=spans.__getitem__)
    print(
        f"DBES throughput over the best other ({best_other.upper()}): "
        f"{gain(spans[best_other], spans['dbes']):+.1%}   paper: +{PAPER_DBES_VS_LDF_EVOLVING:.0%} over LDF"
    )


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
    print_esp(esp_sweep(args.seeds), args.seeds)
    evolving_mix(args.seeds)
    minagree_vs_fcfs(args.batches, args.seeds)
    sweep_001(args.batches)
    print(f"\nwall time {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
