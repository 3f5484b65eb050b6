"""Simulator scaling: time per 1,000 jobs and peak memory for 10K, 50K and 250K jobs.

    python benchmarks/bench_sim.py [--sizes 10000,50000,250000] [--scheduler easy] [--nodes 256]

Each size runs in its own process (so that peak RSS belongs to that size alone) on a seeded
synthetic Lublin-Feitelson-style trace at offered load 0.7 and, for reference, on the real
traces concatenated end to end (KTH-SP2 + NASA-iPSC + lublin_256, repeated) when
``../shared/traces`` is there. Columns: jobs, seconds to build the workload, seconds to
simulate, ms per 1,000 jobs, whole-process wall time and peak RSS; the 250K-job target is
<= 15 s. Memory is linear if ``(peak - base) / jobs`` stays flat; ``base`` is the RSS of the
same process with a 1,000-job trace.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import child

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT.parent / "shared" / "traces"
REAL = ["KTH-SP2-1996-2.1-cln.swf.gz", "NASA-iPSC-1993-3.1-cln.swf.gz", "lublin_256.swf.gz"]


def run_child(args: list[str]) -> tuple[dict[str, float], float, float]:
    return child.run_child("sim_child.py", args)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10000,50000,250000")
    ap.add_argument("--scheduler", default="easy")
    ap.add_argument("--nodes", type=int, default=256)
    ap.add_argument("--no-real", action="store_true", help="skip the concatenated real traces")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    real = [str(TRACES / t) for t in REAL if (TRACES / t).is_file()]
    kinds = ["synthetic"] + (["concat"] if real and not args.no_real else [])

    print(f"scheduler {args.scheduler}; synthetic: {args.nodes} nodes, load 0.7; concat: {', '.join(REAL)}")
    head = f"{'trace':<10} {'jobs':>7} {'build[s]':>9} {'sim[s]':>8} {'ms/1000':>8} {'wall[s]':>8} "
    print(head + f"{'peak[MiB]':>10} {'KiB/job':>8} {'over-cap':>8}")
    for kind in kinds:
        extra = real if kind == "concat" else []
        base_info, _, base_peak = run_child([kind, "1000", str(args.nodes), args.scheduler, *extra])
        for n in sizes:
            info, wall, peak = run_child([kind, str(n), str(args.nodes), args.scheduler, *extra])
            per_k = 1000.0 * info["sim"] / info["jobs"] * 1000.0
            kib_per_job = (peak - base_peak) * 1024.0 / max(1, info["jobs"] - base_info["jobs"])
            print(
                f"{kind:<10} {info['jobs']:>7} {info['build']:>9.2f} {info['sim']:>8.2f} {per_k:>8.1f} "
                f"{wall:>8.2f} {peak:>10.0f} {kib_per_job:>8.2f} {info['over']:>8}"
            )
            if n >= 250_000 and wall > 15.0:
                print(f"  !! {n} jobs took {wall:.1f} s whole-process (target <= 15 s)")


if __name__ == "__main__":
    main()
