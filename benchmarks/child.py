"""One benchmark run in a process of its own, so that its peak RSS is that run's alone."""

from __future__ import annotations

import json
import os
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
