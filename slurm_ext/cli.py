"""`slurm-ext`: the admin's command. Each sub-command lives beside the code it drives.

Other packages add sub-apps through the ``slurm_ext.commands`` entry-point group (``ejb`` does:
``slurm-ext ejb ...``), so this module never imports them: imports flow from ``ejb`` to
``slurm_ext`` only.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from importlib.metadata import EntryPoint, entry_points

import typer

from slurm_ext.cli_options import OneLineErrors

PLUGIN_GROUP = "slurm_ext.commands"

app = typer.Typer(
    cls=OneLineErrors,
    help="Elastic jobs on an unmodified Slurm: local test cluster, simulator, control service.",
    no_args_is_help=True,
    add_completion=False,
)

# Sub-commands register here, one line each (keep the CLI a thin layer over library calls).
from slurm_ext.local.cli import cluster_app  # noqa: E402

app.add_typer(cluster_app, name="cluster")
from slurm_ext.sim.cli import compare_cmd, simulate_cmd  # noqa: E402

app.command("simulate")(simulate_cmd)
app.command("compare")(compare_cmd)
from slurm_ext.demo.cli import demo_cmd  # noqa: E402

app.command("demo")(demo_cmd)
from slurm_ext.service.cli import events_cmd, serve_cmd  # noqa: E402
from slurm_ext.service.units import install_units_cmd  # noqa: E402

app.command("serve")(serve_cmd)
app.command("events")(events_cmd)
app.command("install-units")(install_units_cmd)
from slurm_ext.slurm.doctor import doctor_cmd  # noqa: E402

app.command("doctor")(doctor_cmd)
from slurm_ext.bench import bench_app  # noqa: E402

app.add_typer(bench_app, name="bench")
from slurm_ext.reproduce import reproduce_app  # noqa: E402

app.add_typer(reproduce_app, name="reproduce")


def command_names(target: typer.Typer) -> set[str]:
    """Names of ``target``'s commands and groups (a plugin may not take one of them)."""
    names = {c.name or (c.callback.__name__ if c.callback else "") for c in target.registered_commands}
    return names | {g.name or "" for g in target.registered_groups}


def add_plugins(target: typer.Typer, plugins: Iterable[EntryPoint]) -> list[str]:
    """Add each entry point's Typer app (or command function) to ``target`` under the entry point's
    name; return the names added. A plugin that fails to load, or whose name is taken, is skipped
    with one warning line on stderr: ``slurm-ext cluster ...`` must work even if a plugin is broken."""
    added = []
    for ep in plugins:
        if ep.name in command_names(target):
            continue  # the same package seen twice on the path, or a clash with a built-in command
        try:
            obj = ep.load()
        except Exception as exc:  # noqa: BLE001 -- any import error of a plugin
            print(f"warning: slurm-ext plugin {ep.name!r} ({ep.value}) not loaded: {exc}", file=sys.stderr)
            continue
        if isinstance(obj, typer.Typer):
            target.add_typer(obj, name=ep.name)
        elif callable(obj):
            target.command(ep.name)(obj)
        else:
            print(f"warning: slurm-ext plugin {ep.name!r} ({ep.value}) is not a command", file=sys.stderr)
            continue
        added.append(ep.name)
    return added


add_plugins(app, entry_points(group=PLUGIN_GROUP))  # `slurm-ext ejb ...` once elastic-slurm is installed
