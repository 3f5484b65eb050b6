"""`slurm-ext simulate/compare` and `ejb simulate ...` share their flags: same names, help and
defaults (slurm_ext.cli_options); files only with --out; --no-plots; -q; errors exit 2 in one line."""

from __future__ import annotations

import json

import typer
from typer.testing import CliRunner

from ejb.cli import app as ejb_app
from slurm_ext.cli import app as slurm_ext_app

runner = CliRunner()
SHARED = ("--out", "--no-plots", "--quiet", "--json", "--workload", "--swf-reading")


def _options(app: typer.Typer, path: list[str]) -> dict[str, object]:
    cmd = typer.main.get_command(app)
    for name in path:
        cmd = cmd.commands[name]  # type: ignore[attr-defined]
    return {p.opts[0]: p for p in cmd.params if p.opts and p.opts[0].startswith("--")}


def test_shared_flags_are_one_definition():
    commands = [
        _options(slurm_ext_app, ["simulate"]),
        _options(slurm_ext_app, ["compare"]),
        _options(ejb_app, ["simulate", "one-elastic"]),
        _options(ejb_app, ["simulate", "all-elastic"]),
        _options(ejb_app, ["simulate", "sensitivity"]),
    ]
    for flag in SHARED:
        first = commands[0][flag]
        for opts in commands[1:]:
            p = opts[flag]
            assert (p.opts, p.secondary_opts, p.help) == (first.opts, first.secondary_opts, first.help), flag
            if flag != "--swf-reading":  # ejb reads traces as the paper did by default
                assert p.default == first.default, flag
    assert commands[0]["--out"].default is None and commands[0]["--quiet"].opts == ["--quiet", "-q"]


def test_ejb_writes_files_only_with_out(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = runner.invoke(ejb_app, ["simulate", "one-elastic", "--limit", "200", "--workers", "1"])
    assert r.exit_code == 0, r.output
    assert list(tmp_path.iterdir()) == [] and "wrote" not in r.output
    r = runner.invoke(ejb_app, ["simulate", "one-elastic", "--limit", "200", "--workers", "1", "-o", "res"])
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in (tmp_path / "res").iterdir()) == ["figure7.png", "one_elastic.csv"]


def test_slurm_ext_no_plots_and_quiet(tmp_path):
    r = runner.invoke(slurm_ext_app, ["simulate", "-q", "--no-plots", "-o", str(tmp_path), "-p", "fcfs"])
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fcfs.jobs.csv", "fcfs.summary.json"]
    r = runner.invoke(slurm_ext_app, ["compare", "-p", "fcfs,easy", "--no-plots", "-o", str(tmp_path / "c")])
    assert r.exit_code == 0, r.output
    assert len(list((tmp_path / "c").iterdir())) == 4 and r.output.count("wrote ") == 4


def test_migration_values_in_seconds_and_the_old_minutes_spelling(tmp_path):
    base = ["simulate", "sensitivity", "--o-max-values", "", "--delta-values", "", "--sample", "4"]
    base += ["--json", "-q", "--workers", "1"]
    new = runner.invoke(ejb_app, [*base, "--migration-values", "60,150"])
    old = runner.invoke(ejb_app, [*base, "--migration-minutes", "1,2.5"])
    assert new.exit_code == old.exit_code == 0, new.output + old.output
    points = [json.loads(r.stdout)["points"] for r in (new, old)]
    assert [(p["parameter"], p["value"]) for p in points[0]] == [("migration", 60.0), ("migration", 150.0)]
    assert points[0] == points[1]
    opts = _options(ejb_app, ["simulate", "sensitivity"])
    assert opts["--migration-minutes"].hidden and not opts["--migration-values"].hidden


def test_user_errors_exit_2_with_one_line(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    for app, args in (
        (slurm_ext_app, ["simulate", "-o", str(blocker / "sub"), "-p", "fcfs", "-q"]),
        (ejb_app, ["simulate", "all-elastic", "-o", str(blocker / "sub"), "-q"]),
        (ejb_app, ["simulate", "sensitivity", "--migration-values", "x"]),
        (slurm_ext_app, ["compare", "-p", ","]),
    ):
        r = runner.invoke(app, args)
        assert r.exit_code == 2, (args, r.output)
        assert r.output.startswith("error: ") and len(r.output.strip().splitlines()) == 1, r.output


def test_usage_errors_are_one_line_too():
    for app, args in (
        (slurm_ext_app, ["simulate", "--bogus"]),
        (slurm_ext_app, ["simulate", "--jobs", "many"]),
        (slurm_ext_app, ["nosuch"]),
        (ejb_app, ["simulate", "one-elastic", "--o-max", "x"]),
        (ejb_app, ["cancel"]),
    ):
        r = runner.invoke(app, args)
        assert r.exit_code == 2, (args, r.output)
        assert r.output.startswith("error: ") and len(r.output.strip().splitlines()) == 1, r.output
    r = runner.invoke(slurm_ext_app, ["simulate", "--help"])
    assert r.exit_code == 0 and "Usage" in r.output
    r = runner.invoke(ejb_app, [])
    assert "Usage" in r.output  # no arguments: the help, as before
