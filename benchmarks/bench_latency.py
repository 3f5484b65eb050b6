"""DMR latency on the local cluster, beside paper 002 (same as `slurm-ext bench latency`).

python benchmarks/bench_latency.py [--json] [--resizes 20] [--state-mb 1024]
"""

from slurm_ext.service.latency import main

if __name__ == "__main__":
    main()
