"""``slurm-ext reproduce``: a paper's simulations run here, written beside the paper's numbers.

One module per paper: :mod:`~slurm_ext.reproduce.sd` (003, SD-Policy on RICC and CEA-Curie),
:mod:`~slurm_ext.reproduce.dbes` (000, DBES on the modified ESP workload).
"""

from __future__ import annotations

import typer

from slurm_ext.reproduce.dbes import dbes_cmd
from slurm_ext.reproduce.sd import sd_cmd

reproduce_app = typer.Typer(help="Run a paper's experiments and write tables and figures beside its numbers.",
                            no_args_is_help=True)  # fmt: skip
reproduce_app.command("sd")(sd_cmd)
reproduce_app.command("dbes")(dbes_cmd)
