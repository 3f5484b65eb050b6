"""``slurm-ext reproduce``: a paper's simulations run here, written beside the paper's numbers.

One module per paper: :mod:`~slurm_ext.reproduce.sd` (003, SD-Policy on RICC and CEA-Curie),
:mod:`~slurm_ext.reproduce.dbes` (000, DBES on the modified ESP workload).

Other packages add papers through the ``slurm_ext.reproduce`` entry-point group (``pyproject.toml``):
``slurm-ext reproduce ejb`` (paper 004, Elastic Job Bundling) is ``ejb.experiments.reproduce:ejb_cmd``.
It is an entry point, not an import, because ``slurm_ext`` does not depend on ``ejb``: ``ejb`` imports
``slurm_ext``, never the reverse (``tests/unit/test_import_graph.py``), and ``slurm-ext reproduce sd``
must work where ``ejb`` is not installed. After changing the group, run ``pip install -e .`` again.
"""

from __future__ import annotations

from importlib.metadata import entry_points

import typer

from slurm_ext.plugins import add_plugins
from slurm_ext.reproduce.dbes import dbes_cmd
from slurm_ext.reproduce.sd import sd_cmd

REPRODUCE_GROUP = "slurm_ext.reproduce"

reproduce_app = typer.Typer(help="Run a paper's experiments and write tables and figures beside its numbers.",
                            no_args_is_help=True)  # fmt: skip
reproduce_app.command("sd")(sd_cmd)
reproduce_app.command("dbes")(dbes_cmd)
add_plugins(reproduce_app, entry_points(group=REPRODUCE_GROUP))  # `ejb` once elastic-slurm is installed
