"""``slurm-ext reproduce sd`` end to end on small stand-ins of the two logs (the real ones are not in
the repository): every run's row, the report with the paper's numbers, the figure; bad input exit 2."""

from __future__ import annotations

import csv
import gzip
import json
import subprocess
import sys
from pathlib import Path

from slurm_ext.reproduce.sd import SEPTEMBER


def swf_line(job: int, submit: int, run: int, procs: int, limit: int, partition: int = -1) -> str:
    return f"{job} {submit} 0 {run} {procs} -1 -1 {procs} {limit} -1 1 1 1 -1 1 {partition} -1 -1"


def traces(tmp_path: Path) -> Path:
    """RICC (no header, submits from 2010-05-01, 8 cores a node) and Curie (16, partition 10)."""
    folder = tmp_path / "traces"
    folder.mkdir()
    ricc = [
        swf_line(i, SEPTEMBER - 100 + 37 * i, 600 + 97 * (i % 7), 8 * (1 + i % 5), 3600) for i in range(80)
    ]
    curie = [
        swf_line(i, 53 * i, 900 + 61 * (i % 5), 16 * (1 + i % 9), 7200, 10 if i % 4 else 4) for i in range(80)
    ]
    with gzip.open(folder / "RICC-2010-2.swf.gz", "wt") as f:
        f.write("\n".join(ricc) + "\n")
    with gzip.open(folder / "CEA-Curie-2011-2.1-cln.swf.gz", "wt") as f:
        f.write("; MaxNodes: 5040\n; MaxProcs: 80640\n" + "\n".join(curie) + "\n")
    return folder


def reproduce(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "slurm_ext", "reproduce", "sd", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def test_reproduce_sd_writes_each_runs_row_beside_the_papers_numbers(tmp_path: Path) -> None:
    out = tmp_path / "out"
    res = reproduce("--traces", str(traces(tmp_path)), "--jobs", "40", "--ricc-window", "5",
                    "--out", str(out), "--json")  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    summary = json.loads(res.stdout)
    rows = list(csv.DictReader((out / "sd.csv").open()))
    sd = ["MAXSD 5", "MAXSD 10", "MAXSD 50", "MAXSD inf", "dynamic"]
    # whole nodes, then cores shared, then cores shared under the worst-case model (Fig. 8)
    runs = [
        "EASY",
        "static backfill (100 reservations)",
        *(f"SD {r}" for r in sd),
        *(f"SD cores {r}" for r in sd),
        "SD cores dynamic, worst case",
    ]
    assert [(r["workload"], r["run"]) for r in rows] == [
        (w, r) for w in ("RICC-sept", "CEA-Curie") for r in runs
    ]
    assert all(r["jobs"] == "40" for r in rows)  # RICC: September jobs from the 6th; Curie: partition 10's
    easy = [r for r in summary["rows"] if r["run"] == "EASY"]
    assert all(r["slowdown_vs_easy"] == 0 and r["makespan"] > 0 for r in easy)
    report = (out / "report.md").read_text()
    assert "| paper: static backfill | 198,509 | 21,615,111 | 29,858 | 3,666.5 |" in report, report
    assert "best slowdown -70.4%, response -50.0%" in report
    assert "Fig. 8, worst case against ideal" in report
    backfill = next(r for r in summary["rows"] if r["run"].startswith("static backfill"))
    assert all(r["slowdown_vs_backfill"] == r["slowdown"] / backfill["slowdown"] - 1
               for r in summary["rows"] if r["workload"] == backfill["workload"])  # fmt: skip
    assert (out / "sd.png").stat().st_size > 1000


def test_reproduce_sd_without_the_traces_is_one_line_and_exit_2(tmp_path: Path) -> None:
    res = reproduce("--traces", str(tmp_path / "nowhere"), "--out", str(tmp_path / "out"))
    assert res.returncode == 2 and res.stderr.startswith("error: ") and res.stderr.count("\n") == 1, (
        res.stderr
    )
    res = reproduce("--jobs", "0")
    assert res.returncode == 2 and "--jobs must be >= 1" in res.stderr
    res = reproduce("--sharing", "sockets")
    assert res.returncode == 2 and "--sharing must be nodes, cores or both" in res.stderr


def test_reproduce_dbes_runs_figs_4_and_7_with_the_papers_claims(tmp_path: Path) -> None:
    from slurm_ext.reproduce.dbes import ESP_POLICIES, FRACTIONS, PAPER_TABLE_II, lower_bound

    out = tmp_path / "out"
    cmd = [
        sys.executable,
        "-m",
        "slurm_ext",
        "reproduce",
        "dbes",
        "--seeds",
        "1",
        "--out",
        str(out),
        "--json",
    ]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    summary = json.loads(res.stdout)
    fig4 = summary["fig4"]
    assert list(fig4) == [f"{f:g}" for f in FRACTIONS] and all(
        list(r) == list(ESP_POLICIES) for r in fig4.values()
    )
    assert len({r["rigid"] for r in fig4.values()}) == 1  # rigid runs ignore the malleable share
    assert all(
        span >= lower_bound() for r in fig4.values() for span in r.values()
    )  # no run beats a full machine
    assert set(summary["fig7"]) == set(PAPER_TABLE_II) and all(
        r["served"] > 0 for r in summary["fig7"].values()
    )
    assert len(summary["claims"]) == 10 and summary["claims"][1]["paper"] == "+32%"
    rows = list(csv.DictReader((out / "dbes.csv").open()))
    assert len(rows) == len(FRACTIONS) * len(ESP_POLICIES) + len(PAPER_TABLE_II)
    assert "| DBES throughput over rigid at 100% | +32% |" in (out / "report.md").read_text()
    assert (out / "dbes.png").stat().st_size > 1000
    bad = subprocess.run([*cmd[:5], "--seeds", "0"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and bad.stderr.strip() == "error: --seeds must be >= 1, got 0"
