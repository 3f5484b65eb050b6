"""Record or check EJB experiment 1's regression fixtures (``tests/fixtures/ejb_regression/``).

    python benchmarks/ejb_regression.py            # check both cases
    python benchmarks/ejb_regression.py --record   # rewrite the fixtures from today's code

Cases, both read as the paper's simulator read SWF (``--swf-reading paper``, ejb/NOTES.md) with the
paper's settings (EJBParams defaults): kth-small (every target's row in full; the unit tests check it
too) and the whole KTH-SP2 trace from ``../shared/traces`` (target count, Table 3's changes and a
digest of the rows; here only, when the trace is there).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ejb.experiments.regression import run_case
from ejb.experiments.target_runs import default_workers
from slurm_ext.workloads import bundled_trace_path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "ejb_regression"
KTH = ROOT.parent / "shared" / "traces" / "KTH-SP2-1996-2.1-cln.swf.gz"


def cases() -> list[tuple[str, Path, bool]]:
    out = [("kth-small-one-elastic", bundled_trace_path(), True)]
    if KTH.is_file():
        out.append(("kth-sp2-one-elastic", KTH, False))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--record", action="store_true", help="write the fixtures instead of checking")
    args = ap.parse_args()
    failed = 0
    for name, path, full in cases():
        got, fixture = run_case(path, full, default_workers()), FIXTURES / f"{name}.json"
        if args.record:
            fixture.write_text(json.dumps(got, indent=None) + "\n")
            print(f"recorded {name}: {got['targets']} targets")
            continue
        want = json.loads(fixture.read_text())
        same = got == want
        failed += not same
        print(f"[{'same' if same else 'DIFFERS'}] {name}: {got['targets']} targets, "
              f"turnaround {got['turnaround_change'] * 100:+.1f} %")  # fmt: skip
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
