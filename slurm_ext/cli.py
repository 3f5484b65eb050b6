"""`slurm-ext`: the admin's command. Each sub-command lives beside the code it drives."""

from __future__ import annotations

import typer

app = typer.Typer(
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
from slurm_ext.demo_cli import demo_cmd  # noqa: E402

app.command("demo")(demo_cmd)
from slurm_ext.service.cli import events_cmd, serve_cmd  # noqa: E402

app.command("serve")(serve_cmd)
app.command("events")(events_cmd)
from slurm_ext.bench import bench_app  # noqa: E402

app.add_typer(bench_app, name="bench")
