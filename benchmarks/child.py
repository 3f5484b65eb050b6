"""One benchmark run in a process of its own, so that its peak RSS is that run's alone; or under
valgrind's callgrind, which counts the instructions it executes (:func:`count_child`)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def run_child(script: str, args: list[str]) -> tuple[dict[str, Any], float, float]:
    """Run ``benchmarks/<script>`` with ``args``; returns the JSON object of its last output line,
    the process's wall time (s) and its peak RSS (MiB). A failed run ends the benchmark."""
    with tempfile.TemporaryFile() as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, str(HERE / script), *args], stdout=out, stderr=subprocess.STDOUT
        )
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        out.seek(0)
        text = out.read().decode(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"benchmark child {script} failed:\n{text}")
    return json.loads(text.strip().splitlines()[-1]), wall, usage.ru_maxrss / 1024.0


def count_child(script: str, args: list[str], pycache: Path) -> tuple[dict[str, Any], int]:
    """Run ``benchmarks/<script>`` under callgrind; returns its JSON object and the instructions the
    whole process executed. The count is the same for the same code and inputs whatever else the
    machine is doing (to a few parts per million), unlike seconds; the run is ~50x slower.

    Compiling a module costs more than a 2,000-job simulation, so the run reads its bytecode
    from ``pycache`` (a directory of the caller's, no other process's), filled by the same run
    made once first without valgrind."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise SystemExit("counting instructions needs valgrind (apt-get install valgrind)")
    # fixed too: string hashes, and numpy's OpenBLAS threads (its start-up work varies with them)
    fixed = {"PYTHONHASHSEED": "0", "OPENBLAS_NUM_THREADS": "1", "PYTHONPYCACHEPREFIX": str(pycache)}
    env = {**os.environ, **fixed}
    run = [sys.executable, str(HERE / script), *args]
    subprocess.run(run, capture_output=True, env=env)  # compiles what it imports; fails again below
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "callgrind.log"
        cmd = [valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null", f"--log-file={log}"]
        proc = subprocess.run([*cmd, *run], capture_output=True, text=True, env=env)
        report = log.read_text(errors="replace") if log.exists() else ""
    if proc.returncode != 0:
        text = proc.stdout + proc.stderr + report
        raise SystemExit(f"benchmark child {script} failed under valgrind:\n{text}")
    return json.loads(proc.stdout.strip().splitlines()[-1]), instructions(report)


def instructions(report: str) -> int:
    """The ``I refs`` total of a callgrind log."""
    found = re.search(r"I\s+refs:\s+([\d,]+)", report)
    if found is None:
        raise SystemExit(f"no instruction count in valgrind's report:\n{report}")
    return int(found.group(1).replace(",", ""))
