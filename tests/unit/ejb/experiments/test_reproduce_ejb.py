"""``slurm-ext reproduce ejb --quick`` end to end (through the ``slurm_ext.reproduce`` entry point) on
a stand-in for KTH-SP2: the bundled first 500 jobs of the trace (the whole one is not in the
repository). Real runs: the CSV's numbers are the experiment functions' own."""

from __future__ import annotations

import csv
import gzip
import json
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ejb.experiments.reproduce import CSV_FIELDS, FIGURES, KTH_FILE, QUICK_DELTA, QUICK_MIGRATION, QUICK_O_MAX
from slurm_ext.cli import app

ROOT = Path(__file__).resolve().parents[4]
runner = CliRunner()


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from slurm_ext.workloads import bundled_trace_path

    folder = tmp_path_factory.mktemp("traces")
    with gzip.open(folder / KTH_FILE, "wb") as f:
        f.write(bundled_trace_path().read_bytes())
    return folder


def test_the_entry_point_adds_ejb_to_slurm_ext_reproduce() -> None:
    eps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    assert eps["slurm_ext.reproduce"] == {"ejb": "ejb.experiments.reproduce:ejb_cmd"}
    listed = runner.invoke(app, ["reproduce", "--help"]).output
    assert all(name in listed for name in ("sd", "dbes", "ejb")), listed
    from ejb.cli import app as ejb_app

    assert "--quick" in runner.invoke(ejb_app, ["reproduce", "--help"]).output  # `ejb reproduce` too


def test_reproduce_ejb_quick_writes_every_table_beside_the_papers_numbers(
    traces: Path, tmp_path: Path
) -> None:
    from ejb.experiments.one_elastic import one_elastic
    from slurm_ext.workloads import load_workload
    from slurm_ext.workloads.reading import PAPER

    out = tmp_path / "out"
    res = runner.invoke(
        app,
        [
            "reproduce",
            "ejb",
            "--quick",
            "--traces",
            str(traces),
            "--out",
            str(out),
            "--workers",
            "1",
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output[-2000:]
    summary = json.loads(res.stdout)
    rows = list(csv.DictReader((out / "ejb.csv").open()))
    assert tuple(rows[0]) == CSV_FIELDS and len(rows) == len(summary["rows"])
    by_source: dict[str, list[dict[str, str]]] = {}
    for r in rows:
        by_source.setdefault(r["source"], []).append(r)
    counts = {s: len(rs) for s, rs in by_source.items()}
    points = len(QUICK_O_MAX) + len(QUICK_MIGRATION) + len(QUICK_DELTA)
    assert counts == {"Table 3": 6, "Fig. 7": 5, "Table 4": 8, "Fig. 8": 8 * points, "Table 5": 27,
                      "Fig. 10": 6, "Table 6": 2, "Fig. 11": 2}  # fmt: skip
    assert list(dict.fromkeys(r["group"] for r in by_source["Fig. 8"])) == [
        "o_max=2", "o_max=16", "o_max=64", "migration=60", "migration=600", "delta=0.8", "delta=2",
    ]  # fmt: skip
    t3 = {r["metric"]: r for r in by_source["Table 3"]}
    assert float(t3["targets"]["paper"]) == 4399 and float(t3["tt_change"]["paper"]) == -0.378
    assert {r["group"] for r in by_source["Table 5"]} == {"elastic", "non-elastic", "all"}
    assert all(r["paper"] != "" for r in by_source["Table 5"] + by_source["Table 6"] + by_source["Table 4"])
    # the numbers are experiment 1's own (one worker or two: the same rows)
    direct = one_elastic(load_workload(str(traces / KTH_FILE), reading=PAPER), workers=1)
    assert int(float(t3["targets"]["here"])) == direct.targets > 0
    assert float(t3["tt_change"]["here"]) == pytest.approx(direct.turnaround.change, rel=1e-12)
    report = (out / "report.md").read_text()
    for line in (
        "| paper, KTH | 4,399 | -66.5% | +34.9% | -37.8% [-39.7%, -35.9%] |",  # Table 3
        "| paper, average of 4 traces | | -61.4% | +37.2% | -39.1% |",
        "| paper, KTH | 2.7 | 1.6 | 6.4% | 24.1% |",  # Table 4
        "| elastic | paper | 5,811 | 32,457 | 25,632 (-21.0%) | (-7,347, -6,302) | 22,137 | 13,673 (-38.2%) "
        "| 10,320 | 11,959 (+15.9%) |",  # Table 5
        "| all | paper | 28,203 | 15,836 | 14,463 (-8.7%) | (-1,509, -1,236) |",
        "| paper, KTH | 16.0 | 16.0% | 6.6 | 6.6% | -58.8% |",  # Table 6
        "| targets with t_t unchanged (S_tt = 1) | 1/4 |",  # Fig. 7
    ):
        assert line in report, line
    assert f"| here | {direct.targets:,} |" in report
    for name in FIGURES:
        assert (out / name).stat().st_size > 1000, name
    assert [Path(f).name for f in summary["files"]] == ["ejb.csv", *FIGURES, "report.md"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--jobs", "0"], "error: --jobs must be >= 1, got 0"),
        (["--workers", "0"], "error: --workers must be >= 1, got 0"),
        (["--no-such-option"], "error: No such option: --no-such-option"),
    ],
)
def test_a_bad_option_is_one_line_and_exit_2(
    traces: Path, tmp_path: Path, args: list[str], message: str
) -> None:
    res = runner.invoke(app, ["reproduce", "ejb", "--traces", str(traces), "--out", str(tmp_path), *args])
    assert res.exit_code == 2 and res.output.count("\n") == 1 and res.output.startswith(message), res.output


def test_without_the_trace_it_says_where_it_looked(tmp_path: Path) -> None:
    out = tmp_path / "out"
    res = runner.invoke(
        app, ["reproduce", "ejb", "--quick", "--traces", str(tmp_path / "nowhere"), "--out", str(out)]
    )
    assert res.exit_code == 2 and res.output.count("\n") == 1, res.output
    assert res.output.startswith(f"error: {tmp_path / 'nowhere' / KTH_FILE}: no such file")
    assert not out.exists()
