#!/usr/bin/env bash
# Container start-up: the same `slurm-ext cluster up` as on a host, then either the given command
# (e.g. `slurm-ext serve`) or an interactive shell; the cluster is stopped cleanly on exit.
set -euo pipefail
slurm-ext cluster up --nodes "${NODES:-8}"
trap 'slurm-ext cluster down' EXIT
if [ $# -gt 0 ]; then "$@"; else bash; fi
