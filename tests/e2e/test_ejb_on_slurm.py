"""`ejb simulate one-elastic --on-slurm` and `slurm-ext reproduce ejb --on-slurm` on the local cluster:
experiment 1's targets in chunks, one task of a job array each, give the files a local run writes,
byte for byte (the summary's wall time and worker count aside). On the bundled 500-job trace
(kth-small: 56 targets) and, for `reproduce ejb --quick`, the same trace as the KTH-SP2 stand-in."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ejb.experiments.reproduce import FIGURES, KTH_FILE

from .conftest import Slurm, sh, slurm_env

pytestmark = pytest.mark.slurm

NOT_COMPARED = ("seconds", "workers", "files")  # wall time, how the rows were computed, where they went
CHUNKS = 4


def run(*args: str, timeout: float = 90) -> dict:
    res = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=slurm_env(),
                         timeout=timeout)  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout)


def compared(summary: dict) -> dict:
    return {k: v for k, v in summary.items() if k not in NOT_COMPARED}


def ours_alive(name: str) -> list[str]:
    return sh("squeue", "-h", "-n", name, "-t", "PENDING,RUNNING,COMPLETING", "-o", "%i %T").split()


def test_one_elastic_on_slurm_writes_the_files_a_local_run_writes(tmp_path: Path, slurm: Slurm) -> None:
    given = ["-m", "ejb", "simulate", "one-elastic", "-w", "kth-small", "--json", "-q"]
    started = time.monotonic()
    here = run(*given, "--out", str(tmp_path / "local"))
    local_s = time.monotonic() - started
    there = run(
        *given, "--out", str(tmp_path / "slurm"), "--on-slurm", "--chunks", str(CHUNKS), "--time", "5"
    )
    print(f"local {local_s:.1f} s, on Slurm {time.monotonic() - started - local_s:.1f} s")
    assert here["targets"] == 56 and there["workers"] == CHUNKS
    assert compared(there) == compared(here)
    for name in ("one_elastic.csv", "figure7.png"):
        assert (tmp_path / "slurm" / name).read_bytes() == (tmp_path / "local" / name).read_bytes(), name
    tasks = sorted((tmp_path / "slurm" / "on-slurm").glob("task-*.out"))
    assert len(tasks) == CHUNKS  # one task per chunk, each with its own output
    slurm.wait(lambda: ours_alive("ejb-one-elastic") == [], timeout=30)


def test_reproduce_ejb_quick_on_slurm_writes_the_files_a_local_run_writes(
    tmp_path: Path, slurm: Slurm
) -> None:
    from slurm_ext.workloads import bundled_trace_path

    traces = tmp_path / "traces"
    traces.mkdir()
    with gzip.open(traces / KTH_FILE, "wb") as f:
        f.write(bundled_trace_path().read_bytes())
    given = ["-m", "slurm_ext", "reproduce", "ejb", "--quick", "--traces", str(traces), "--json"]
    started = time.monotonic()
    here = run(*given, "--out", str(tmp_path / "local"))
    local_s = time.monotonic() - started
    there = run(*given, "--out", str(tmp_path / "slurm"), "--on-slurm", "--chunks", "2", "--time", "5")
    print(f"local {local_s:.1f} s, on Slurm {time.monotonic() - started - local_s:.1f} s")
    assert there["rows"] == here["rows"] and there["on_slurm_tasks"] == 2 * 8  # experiment 1 + 7 points
    for name in ("ejb.csv", *FIGURES):
        assert (tmp_path / "slurm" / name).read_bytes() == (tmp_path / "local" / name).read_bytes(), name
    slurm.wait(lambda: ours_alive("reproduce-ejb") == [], timeout=30)
