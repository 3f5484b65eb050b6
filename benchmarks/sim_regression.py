"""Record or check the simulator's regression fixtures (``tests/fixtures/sim_regression/``).

    python benchmarks/sim_regression.py            # check every case, full KTH included
    python benchmarks/sim_regression.py --record   # rewrite the fixtures from today's code

Cases: kth-small and ESP (per-job columns kept in full; also checked by the unit tests) and the
full KTH-SP2 trace from ``../shared/traces`` (summary metrics and a per-job digest; here only),
each under easy, fcfs, dmr, dbes, sd and minagree with 50 % malleable jobs, seed 0.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from slurm_ext.sim.regression import Case, compare, record, run_case

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "sim_regression"
KTH = ROOT.parent / "shared" / "traces" / "KTH-SP2-1996-2.1-cln.swf.gz"
POLICIES = ("easy", "fcfs", "dmr", "dbes", "sd", "minagree")
# the other policies sharing the working copy and profile code, on the small traces only
SMALL_EXTRA = ("ep", "esf", "edf", "ldf", "backfill", "sd-dynamic")
SMALL = ("kth-small", "esp")


def cases(include_full: bool) -> list[tuple[Case, bool]]:
    """(case, keep per-job columns in full)."""
    out = [(Case(w, p), True) for w in SMALL for p in (*POLICIES, *SMALL_EXTRA)]
    if include_full:
        out += [(Case(str(KTH), p), False) for p in POLICIES]
    return out


def fixture_path(case: Case) -> Path:
    return FIXTURES / f"{case.tag}.json"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--record", action="store_true", help="write the fixtures instead of checking")
    ap.add_argument("--small", action="store_true", help="kth-small and ESP only")
    ap.add_argument("--only-missing", action="store_true", help="with --record: keep existing fixtures")
    args = ap.parse_args()
    full = not args.small and KTH.is_file()
    failed = 0
    for case, keep in cases(full):
        if args.record and args.only_missing and fixture_path(case).is_file():
            continue
        t0 = time.perf_counter()
        rec = record(case, run_case(case), full=keep)
        wall = time.perf_counter() - t0
        path = fixture_path(case)
        if args.record:
            if not keep:  # the case's workload path is machine-specific; the file name says which
                rec["case"]["workload"] = path.name.split("-")[0]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(rec, indent=None, separators=(",", ":")) + "\n")
            print(f"{case.tag:<40} recorded  {wall:7.2f} s")
            continue
        diffs = compare(json.loads(path.read_text()), rec)
        failed += bool(diffs)
        print(f"{case.tag:<40} {'DIFFERS' if diffs else 'same':<8} {wall:7.2f} s")
        for d in diffs[:5]:
            print(f"    {d}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
