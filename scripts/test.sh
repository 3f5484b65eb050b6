#!/usr/bin/env bash
# The README's test command: install, start the local Slurm cluster (if not up), lint, run every test,
# and stop the cluster again if this script started it. ELASTIC_INSTALLED=1 skips the install (.ci/run
# installs first, then runs this beside scripts/docker-ci.sh, which must not see the package reinstalled).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

[ "${ELASTIC_INSTALLED:-0}" = 1 ] || bash scripts/install.sh
started=0
if ! $PY -m slurm_ext cluster status 2>/dev/null | grep -q "^local cluster: up"; then
  $PY -m slurm_ext cluster up
  started=1
fi
stop() { if [ "$started" = 1 ]; then $PY -m slurm_ext cluster down; fi; }
trap stop EXIT

$PY -m ruff check .
$PY -m pytest "$@"
