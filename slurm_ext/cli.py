"""`slurm-ext`: the admin's command. Each sub-command lives beside the code it drives.

Other packages add sub-apps through the ``slurm_ext.commands`` entry-point group (``ejb`` does:
``slurm-ext ejb ...``), so this module never imports them: imports flow from ``ejb`` to
``slurm_ext`` only.
"""

from __future__ import annotations

from importlib.metadata import entry_points

import typer

from slurm_ext.cli_options import OneLineErrors
from slurm_ext.plugins import add_plugins, command_names

PLUGIN_GROUP = "slurm_ext.commands"
# add_plugins and command_names live in slurm_ext.plugins (slurm_ext.reproduce uses them too)
__all__ = ["PLUGIN_GROUP", "add_plugins", "app", "command_names"]

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


add_plugins(app, entry_points(group=PLUGIN_GROUP))  # `slurm-ext ejb ...` once elastic-slurm is installed
