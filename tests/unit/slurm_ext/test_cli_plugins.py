"""`slurm-ext` sub-apps from the `slurm_ext.commands` entry points: `slurm-ext ejb ...`."""

from __future__ import annotations

import tomllib
from importlib.metadata import EntryPoint
from pathlib import Path

import typer
from typer.testing import CliRunner

from slurm_ext.cli import PLUGIN_GROUP, add_plugins, command_names

ROOT = Path(__file__).resolve().parents[3]
runner = CliRunner()


def _fresh() -> typer.Typer:
    app = typer.Typer(no_args_is_help=True)

    @app.command("cluster")
    def cluster() -> None:
        """A built-in command."""

    return app


def test_pyproject_declares_ejb_as_a_sub_app():
    eps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    assert eps[PLUGIN_GROUP] == {"ejb": "ejb.cli:app"}


def test_ejb_commands_run_under_slurm_ext_ejb(tmp_path):
    app = _fresh()
    assert add_plugins(app, [EntryPoint("ejb", "ejb.cli:app", PLUGIN_GROUP)]) == ["ejb"]
    for args in (["ejb"], ["ejb", "simulate"], ["ejb", "bench"]):
        r = runner.invoke(app, [*args, "--help"])
        assert r.exit_code == 0, r.output
    listed = runner.invoke(app, ["ejb", "--help"]).output
    for name in ("simulate", "manager", "status", "cancel", "demo", "bench"):
        assert name in listed
    r = runner.invoke(
        app,
        [
            "ejb",
            "simulate",
            "one-elastic",
            "--limit",
            "200",
            "--json",
            "-q",
            "--no-plots",
            "-o",
            str(tmp_path),
        ],
    )
    assert r.exit_code == 0, r.output
    bad = runner.invoke(app, ["ejb", "simulate", "all-elastic", "--o-max", "0"])
    assert bad.exit_code == 2 and bad.output.startswith("error: ")


def test_broken_taken_or_odd_plugins_are_skipped(capsys):
    app = _fresh()
    eps = [
        EntryPoint("missing", "no_such_module_xyz:app", PLUGIN_GROUP),
        EntryPoint("cluster", "ejb.cli:app", PLUGIN_GROUP),  # a built-in name: not replaced
        EntryPoint("odd", "ejb.params:PAPER_O_MAX", PLUGIN_GROUP),  # not a command
        EntryPoint("ejb", "ejb.cli:app", PLUGIN_GROUP),
        EntryPoint("ejb", "ejb.cli:app", PLUGIN_GROUP),  # the same package twice on the path
    ]
    assert add_plugins(app, eps) == ["ejb"]
    err = capsys.readouterr().err
    assert "'missing'" in err and "'odd'" in err and "'cluster'" not in err
    assert command_names(app) == {"cluster", "ejb"}


def test_slurm_ext_never_imports_ejb_at_module_level():
    offenders = [
        p.relative_to(ROOT)
        for p in (ROOT / "slurm_ext").rglob("*.py")
        if any(line.startswith(("import ejb", "from ejb")) for line in p.read_text().splitlines())
    ]
    assert offenders == []
