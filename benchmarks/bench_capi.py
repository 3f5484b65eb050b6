"""What libdmr's embedding costs: a no-action ``check_status`` from C beside the same call from
Python, and ``dmr_init`` (the interpreter's start) beside a bare ``MPI_Init``.

Both sides make the runtime's whole local path of a check (argument checks, the inhibitor, the
decision's broadcast) with ``DMR_DISABLE=1``, so that no service round trip hides the difference:
that difference is what C pays for reaching the runtime through the embedded interpreter. One rank
(``mpiexec -n 1``), the mpich wheel's MPI.

    python benchmarks/bench_capi.py [--calls N] [--rounds R] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from dmr.toolchain import compile_program

C_PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <dmr.h>
static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}
int main(int argc, char **argv) {
    double t0 = now();
    MPI_Init(&argc, &argv);
    double t1 = now();
    if (argc > 2 && dmr_init() != 0) return 2;
    double t2 = now();
    int n = atoi(argv[1]), size;
    dmr_handle h;
    if (argc > 2) {
        dmr_check_status(1, 8, 2, 0, &size, &h);  /* the first call warms the runtime up */
        double t3 = now();
        for (int i = 0; i < n; i++) dmr_check_status(1, 8, 2, 0, &size, &h);
        printf("%.9f %.9f %.9f\n", (now() - t3) / n, t1 - t0, t2 - t1);
        dmr_finalize();
    } else {
        printf("0 %.9f 0\n", t1 - t0);
    }
    MPI_Finalize();
    return 0;
}
"""

PY_PROGRAM = """
import sys, time
import dmr
rt = dmr.runtime()
n = int(sys.argv[1])
rt.check(1, 8, 2, None)
t = time.perf_counter()
for _ in range(n):
    rt.check(1, 8, 2, None)
print((time.perf_counter() - t) / n)
"""


def mpiexec(*argv: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env["DMR_DISABLE"] = "1"
    return subprocess.run(["mpiexec", "-n", "1", *argv], capture_output=True, text=True, check=True,
                          env=env).stdout  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=20000, help="checks per round (default 20000)")
    ap.add_argument("--rounds", type=int, default=5, help="rounds; the median is reported (default 5)")
    ap.add_argument("--json", action="store_true", help="one JSON object instead of a table")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "capi.c"
        source.write_text(C_PROGRAM)
        prog = compile_program(source, Path(tmp) / "capi")
        c_call, py_call, init, bare = [], [], [], []
        for _ in range(args.rounds):
            per_call, _, dmr_init = map(float, mpiexec(str(prog), str(args.calls), "dmr").split())
            c_call.append(per_call)
            init.append(dmr_init)
            bare.append(float(mpiexec(str(prog), "0").split()[1]))
            py_call.append(float(mpiexec(sys.executable, "-c", PY_PROGRAM, str(args.calls))))
    res = {
        "calls": args.calls,
        "rounds": args.rounds,
        "check_c_us": statistics.median(c_call) * 1e6,
        "check_python_us": statistics.median(py_call) * 1e6,
        "overhead_us": (statistics.median(c_call) - statistics.median(py_call)) * 1e6,
        "dmr_init_s": statistics.median(init),
        "mpi_init_s": statistics.median(bare),
        "load": os.getloadavg()[0],
    }
    if args.json:
        print(json.dumps(res))
        return
    print(f"no-action check, local path only (DMR_DISABLE=1), median of {args.rounds} rounds x {args.calls}")
    print(f"  from C (libdmr)      {res['check_c_us']:8.2f} us")
    print(f"  from Python          {res['check_python_us']:8.2f} us")
    print(f"  embedding's cost     {res['overhead_us']:8.2f} us per call")
    print(f"dmr_init (Python, imports, runtime) {res['dmr_init_s']:.3f} s")
    print(f"bare MPI_Init                        {res['mpi_init_s']:.3f} s")
    print(f"load average {res['load']:.2f}")


if __name__ == "__main__":
    main()
