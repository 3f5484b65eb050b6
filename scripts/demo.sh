#!/usr/bin/env bash
# The README's demo command: install, start the local 8-node Slurm cluster, and show a running job
# being shrunk and expanded. The cluster stays up afterwards; `python3 -m slurm_ext cluster down` stops it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

bash scripts/install.sh
$PY -m slurm_ext cluster up
$PY -m slurm_ext demo
echo "The cluster is still up (python3 -m slurm_ext cluster status | down)."
