"""Benchmarks on the live local cluster (`slurm-ext bench ...`): a table, or one object with --json."""

from __future__ import annotations

import typer

from slurm_ext.bench.faults import faults_cmd
from slurm_ext.bench.latency import latency_cmd
from slurm_ext.bench.service_load import service_cmd
from slurm_ext.bench.workload import workload_cmd

bench_app = typer.Typer(help="Benchmarks on the live local cluster.", no_args_is_help=True)
bench_app.command("faults")(faults_cmd)
bench_app.command("latency")(latency_cmd)
bench_app.command("service")(service_cmd)
bench_app.command("workload")(workload_cmd)
