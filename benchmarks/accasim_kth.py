"""EASY over the whole KTH-SP2 trace: slurm-ext vs AccaSim 1.1.3, side by side, whole-process.

    python benchmarks/accasim_kth.py [--trace PATH] [--repeat 3] [--accasim-repeat 1] [--no-accasim]

Both tools run as separate processes on the same jobs (one SWF processor = one node, 100 nodes,
EASY); the table gives the median whole-process wall time, the peak RSS of the process, and the
headline metrics each tool reports. AccaSim needs Python <= 3.9: the script creates
``.venv-accasim`` (next to the repository root) from a pyenv 3.9 interpreter if it is missing and
skips AccaSim with a message if that fails (see ``../shared/notes/accasim.md``).

After the timing it checks the simulator's invariants on the whole trace: never more nodes busy
than exist, and, with run times equal to requested times, no EASY head job starting later than
its reservation. AccaSim's schedule is not textbook EASY, so only its speed is compared.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_TRACE = ROOT.parent / "shared" / "traces" / "KTH-SP2-1996-2.1-cln.swf.gz"
DEFAULT_VENV = ROOT / ".venv-accasim"
PY39_CANDIDATES = [
    Path("/root/.pyenv/versions/3.9.18/bin/python"),
    Path(shutil.which("python3.9") or "/nonexistent"),
]

ACCASIM_RUN = """
import sys
from accasim.base.simulator_class import Simulator
from accasim.base.scheduler_class import EASYBackfilling
from accasim.base.allocator_class import FirstFit
sim = Simulator(sys.argv[1], sys.argv[2], EASYBackfilling(FirstFit()), RESULTS_FOLDER_PATH=sys.argv[3])
sim.start_simulation(system_status=False)
"""


def measure(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float, str, int]:
    """Run ``cmd``; return (wall seconds, peak RSS MiB of that process, stdout+stderr, exit code)."""
    with tempfile.TemporaryFile() as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode(errors="replace")
    return wall, usage.ru_maxrss / 1024.0, text, proc.returncode


def ensure_accasim(venv: Path) -> Path | None:
    py = venv / "bin" / "python"
    if py.exists() and subprocess.run([py, "-c", "import accasim"], capture_output=True).returncode == 0:
        return py
    base = next((p for p in PY39_CANDIDATES if p.exists()), None)
    if base is None:
        print("AccaSim skipped: no Python 3.9 interpreter found (AccaSim 1.1.3 needs Python <= 3.9)")
        return None
    print(f"creating {venv} for AccaSim 1.1.3 ...", flush=True)
    steps = [
        [str(base), "-m", "venv", str(venv)],
        [str(py), "-m", "pip", "install", "-q", "--upgrade", "pip"],
        [str(py), "-m", "pip", "install", "-q", "accasim==1.1.3"],
    ]
    for step in steps:
        r = subprocess.run(step, capture_output=True, text=True)
        if r.returncode != 0:
            print(f"AccaSim skipped: {' '.join(step[-3:])} failed: {r.stderr.strip().splitlines()[-1:]}")
            return None
    (venv / ".gitignore").write_text("*\n")
    return py


def run_ours(trace: Path, repeat: int) -> dict[str, object]:
    cmd = [
        sys.executable,
        "-c",
        "from slurm_ext.cli import app; app(prog_name='slurm-ext')",
        "simulate",
        "--workload",
        str(trace),
        "--policy",
        "easy",
        "--json",
    ]
    walls, peaks, summary = [], [], {}
    for _ in range(repeat):
        wall, peak, text, rc = measure(cmd)
        if rc != 0:
            raise SystemExit(f"slurm-ext failed:\n{text}")
        walls.append(wall)
        peaks.append(peak)
        summary = json.loads(text.strip().splitlines()[-1])
    return {
        "tool": "slurm-ext (EASY)",
        "jobs": summary["jobs_simulated"],
        "wall": statistics.median(walls),
        "walls": walls,
        "peak": max(peaks),
        "makespan": summary["makespan"],
        "mean_wait": summary["mean_wait"],
        "summary": summary,
    }


def run_accasim(py: Path, trace: Path, nodes: int, start_time: int, repeat: int) -> dict[str, object] | None:
    with tempfile.TemporaryDirectory() as tmp:
        tmpd = Path(tmp)
        plain = tmpd / trace.name.removesuffix(".gz")
        opener = gzip.open if trace.suffix == ".gz" else open
        with opener(trace, "rb") as src, open(plain, "wb") as dst:
            shutil.copyfileobj(src, dst)
        cfg = {
            "system_name": "bench",
            "start_time": start_time,
            "equivalence": {"processor": {"core": 1}},
            "groups": {"g0": {"core": 1}},
            "resources": {"g0": nodes},
        }
        (tmpd / "cfg.json").write_text(json.dumps(cfg))
        script = tmpd / "run_accasim.py"
        script.write_text(ACCASIM_RUN)
        env = dict(os.environ, TZ="UTC")
        walls, peaks, text = [], [], ""
        for k in range(repeat):
            cmd = [str(py), str(script), str(plain), str(tmpd / "cfg.json"), str(tmpd / f"out{k}")]
            wall, peak, text, rc = measure(cmd, env)
            if rc != 0:
                print(f"AccaSim skipped: it failed:\n{text[-2000:]}")
                return None
            walls.append(wall)
            peaks.append(peak)

    def grab(label: str) -> float | None:
        m = re.search(label + r":\s*([0-9.]+)", text)
        return float(m.group(1)) if m else None

    return {
        "tool": "AccaSim 1.1.3 (EBF-FF)",
        "jobs": int(grab("Total jobs") or 0),
        "wall": statistics.median(walls),
        "walls": walls,
        "peak": max(peaks),
        "makespan": grab("Makespan"),
        "mean_wait": grab("Avg. waiting times"),
    }


def check_invariants(trace: Path) -> None:
    from slurm_ext.sim import simulate
    from slurm_ext.sim.invariants import capacity_violations, head_reservation_violations
    from slurm_ext.workloads import load_swf

    wl = load_swf(trace)
    for sched in ("easy", "fcfs", "backfill"):
        over = capacity_violations(simulate(wl, sched))
        print(f"invariant [{sched}]: instants with more nodes busy than exist: {len(over)}")
    checked, late = head_reservation_violations(wl, "easy")
    print(
        f"invariant [easy, run time = requested time]: {checked} queue heads, "
        f"{len(late)} started after their reservation"
    )
    if len(late):
        raise SystemExit(f"EASY broke a reservation, e.g. {late[:3]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trace", type=Path, default=DEFAULT_TRACE)
    ap.add_argument("--repeat", type=int, default=3, help="runs of slurm-ext (median reported)")
    ap.add_argument("--accasim-repeat", type=int, default=1, help="runs of AccaSim (median reported)")
    ap.add_argument("--venv", type=Path, default=DEFAULT_VENV)
    ap.add_argument("--no-accasim", action="store_true")
    ap.add_argument("--no-invariants", action="store_true")
    args = ap.parse_args()
    if not args.trace.is_file():
        raise SystemExit(f"trace not found: {args.trace}")

    from slurm_ext.workloads.swf import read_swf

    header = read_swf(args.trace).header
    nodes = header.max_procs or header.max_nodes or 100
    start_time = header.unix_start_time or 1

    rows = [run_ours(args.trace, args.repeat)]
    if not args.no_accasim:
        py = ensure_accasim(args.venv)
        acc = run_accasim(py, args.trace, nodes, start_time, args.accasim_repeat) if py else None
        if acc:
            rows.append(acc)

    print(f"\nEASY on {args.trace.name} ({nodes} nodes), whole-process wall time (median)")
    print(
        f"{'tool':<24} {'jobs':>6} {'wall[s]':>8} {'peak[MiB]':>10} {'makespan[s]':>12} {'mean wait[s]':>13}"
    )
    for r in rows:
        print(
            f"{r['tool']:<24} {r['jobs']:>6} {r['wall']:>8.2f} {r['peak']:>10.0f} "
            f"{r['makespan']:>12.0f} {r['mean_wait']:>13.1f}"
        )
    if len(rows) == 2:
        print(f"speed-up: {rows[1]['wall'] / rows[0]['wall']:.1f}x (target >= 10x)")
    print("slurm-ext runs [s]:", ", ".join(f"{w:.2f}" for w in rows[0]["walls"]))
    s = rows[0]["summary"]
    print(
        "slurm-ext metrics: "
        + ", ".join(f"{k}={s[k]}" for k in ("utilisation", "fragmentation", "median_wait", "mean_turnaround",
                                            "mean_bounded_slowdown", "jobs_skipped"))
    )  # fmt: skip
    if not args.no_invariants:
        check_invariants(args.trace)


if __name__ == "__main__":
    main()
