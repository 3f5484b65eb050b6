#!/usr/bin/env bash
# Installs what the toolkit needs on Debian 12, as root: the Slurm/munge/MariaDB packages (and
# valgrind, which bench_malleable.py --instructions counts with), the C and Fortran compilers, and this
# Python package with its test extras. Idempotent; safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

# gfortran, libmpich-dev (MPICH's Fortran bindings, linked to the mpich wheel's libmpi) and pkg-config:
# C and Fortran programs on libdmr (dmr/README.md)
PACKAGES=(slurmctld slurmd slurm-client munge libslurm-dev slurmdbd mariadb-server valgrind
  gcc gfortran libmpich-dev pkg-config)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null | grep -qx installed || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install: Debian packages already present"
else
  echo "install: apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}" >/dev/null
fi

PY=${PYTHON:-python3}
echo "install: pip install -e .[test] (with $($PY --version))"
# Debian's own python3 refuses system-wide pip installs (PEP 668); this is a dedicated test host.
$PY -m pip install -q --disable-pip-version-check -e '.[test]' 2>/dev/null \
  || $PY -m pip install -q --disable-pip-version-check --break-system-packages -e '.[test]'
