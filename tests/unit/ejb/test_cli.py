"""The `ejb simulate` commands on the bundled trace: tables, CSV, figures, --json, errors."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from ejb.cli import app

runner = CliRunner()


def test_one_elastic_prints_table3_and_writes_files(tmp_path):
    r = runner.invoke(app, ["simulate", "one-elastic", "-w", "kth-small", "-o", str(tmp_path), "-q"])
    assert r.exit_code == 0, r.output
    assert "Table 3" in r.output and "Table 4" in r.output
    assert (tmp_path / "one_elastic.csv").read_text().count("\n") > 20
    assert (tmp_path / "figure7.png").stat().st_size > 1000


def test_one_elastic_json_is_one_object(tmp_path):
    r = runner.invoke(app, ["simulate", "one-elastic", "--json", "--no-plots", "-q", "-o", str(tmp_path)])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["experiment"] == "one-elastic" and data["targets"] > 20
    assert data["params"] == {
        "min_procs": 8,
        "o_max": 8,
        "migration": 120.0,
        "delta": 1.0,
        "waiting_first": True,
        "drop_dominated_j0": False,
    }


def test_all_elastic_json(tmp_path):
    r = runner.invoke(app, ["simulate", "all-elastic", "--json", "-q", "--o-max", "4", "-o", str(tmp_path)])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert set(data["groups"]) == {"elastic", "non-elastic", "all"}
    assert data["params"]["o_max"] == 4
    assert (tmp_path / "figure10.png").exists() and (tmp_path / "figure11.png").exists()


def test_sensitivity_small_sweep(tmp_path):
    args = ["simulate", "sensitivity", "--o-max-values", "2,8", "--migration-minutes", "1"]
    args += ["--delta-values", "2", "--json", "-q", "-o", str(tmp_path)]
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
    points = json.loads(r.stdout)["points"]
    assert [(p["parameter"], p["value"]) for p in points] == [
        ("o_max", 2.0),
        ("o_max", 8.0),
        ("migration", 60.0),
        ("delta", 2.0),
    ]
    assert (tmp_path / "figure8.png").exists()


def test_errors_are_one_line():
    for args in (
        ["simulate", "one-elastic", "-w", "/no/such.swf"],
        ["simulate", "all-elastic", "--o-max", "0"],
        ["simulate", "one-elastic", "--method", "slow"],
        ["simulate", "sensitivity", "--delta-values", "x"],
    ):
        r = runner.invoke(app, args)
        assert r.exit_code == 2
        assert r.output.strip().startswith("error: ") and len(r.output.strip().splitlines()) == 1


def test_every_command_has_help():
    for args in (
        [],
        ["simulate"],
        ["simulate", "one-elastic"],
        ["simulate", "all-elastic"],
        ["simulate", "sensitivity"],
    ):
        r = runner.invoke(app, [*args, "--help"])
        assert r.exit_code == 0 and "Usage" in r.output
