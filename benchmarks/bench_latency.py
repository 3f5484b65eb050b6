"""DMR latency on the local cluster, beside paper 002 (same as `slurm-ext bench latency`).

python benchmarks/bench_latency.py [--strategy merge|expander] [--cycles 10] [--json]
"""

import typer

from slurm_ext.bench.latency import latency_cmd

if __name__ == "__main__":
    typer.run(latency_cmd)
