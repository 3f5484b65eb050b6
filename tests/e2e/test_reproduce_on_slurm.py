"""`slurm-ext reproduce sd --on-slurm` on the local cluster: its runs as one job array give the CSV
rows a local run gives (wall times aside); a task that fails names its run and shows its output;
Ctrl-C cancels the array. On the small stand-in logs of the unit tests (26 runs of 40 jobs)."""

from __future__ import annotations

import csv
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from slurm_ext.reproduce import sd
from slurm_ext.reproduce.on_slurm import ArrayOptions, TaskFailed, run_on_slurm
from slurm_ext.reproduce.runs import Run
from slurm_ext.reproduce.sweep import slurm_cluster
from tests.unit.slurm_ext.test_reproduce import traces

from .conftest import Slurm, sh, slurm_env

pytestmark = pytest.mark.slurm

WALL_TIME = ("seconds",)  # sd.csv's columns that may differ between two executions of a run
NAME = "reproduce-sd"  # the array's job name


def reproduce(*args: str) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "slurm_ext", "reproduce", "sd", *args]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=slurm_env())


def finished(proc: subprocess.Popen[str], timeout: float = 90) -> str:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err[-3000:]
    return out


def rows(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return [{k: v for k, v in row.items() if k not in WALL_TIME} for row in csv.DictReader(f)]


def ours_alive() -> list[str]:
    return sh("squeue", "-h", "-n", NAME, "-t", "PENDING,RUNNING,COMPLETING", "-o", "%i %T").split()


def test_sd_on_slurm_writes_the_rows_a_local_run_writes(tmp_path: Path, slurm: Slurm) -> None:
    folder = traces(tmp_path)
    given = ["--traces", str(folder), "--jobs", "40", "--ricc-window", "5", "--json"]
    started = time.monotonic()
    finished(reproduce(*given, "--out", str(tmp_path / "local")))
    local_s = time.monotonic() - started
    finished(reproduce(*given, "--out", str(tmp_path / "slurm"), "--on-slurm", "--time", "5"))
    print(f"local {local_s:.1f} s, on Slurm {time.monotonic() - started - local_s:.1f} s")
    here, there = rows(tmp_path / "local" / "sd.csv"), rows(tmp_path / "slurm" / "sd.csv")
    assert len(here) == len(sd.runs(folder, 40, 5)) and "seconds" not in here[0]
    assert there == here
    tasks = sorted((tmp_path / "slurm" / "on-slurm").glob("task-*.out"))
    assert len(tasks) == len(here)  # one task per run, each with its own output
    slurm.wait(lambda: ours_alive() == [], timeout=30)  # tasks that wrote their rows end too


def test_a_failing_task_names_its_run_and_shows_its_output(tmp_path: Path, slurm: Slurm) -> None:
    good, bad = sd.runs(traces(tmp_path), 40, 5)[:2]
    broken = Run(bad.label, {**bad.params, "traces": str(tmp_path / "nowhere")})
    options = ArrayOptions(tmp_path / "shared", name=NAME, poll=0.3)
    with pytest.raises(TaskFailed) as failed:
        run_on_slurm(sd.execute, [good, broken], options, lambda n, label: None, slurm_cluster())
    said = str(failed.value)
    assert said.startswith(f"run 1 ({bad.label}) ended FAILED without its row; the end of "), said
    assert "ValueError: workload" in said and "nowhere" in said, said  # the traceback's end
    slurm.wait(lambda: ours_alive() == [], timeout=30)  # tasks that wrote their rows end too


def test_ctrl_c_cancels_the_array(tmp_path: Path, slurm: Slurm) -> None:
    folder = traces(tmp_path)
    given = ["--traces", str(folder), "--jobs", "40", "--ricc-window", "5", "--json"]
    proc = reproduce(*given, "--out", str(tmp_path / "out"), "--on-slurm", "--max-parallel", "1")
    slurm.wait(ours_alive, timeout=30, every=0.2)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130 and "the job array is cancelled" in err, err
    slurm.wait(lambda: ours_alive() == [], timeout=30)
