#!/usr/bin/env bash
# CI for the dockerized cluster: build every Slurm release's image at once (or find it in Docker's image
# store by the hash of its inputs); then, for each release, bring the compose cluster up, run tests/docker
# against it (the adapter, MPI across containers, the main demo growing FS by merge), take it down; then
# the same cluster without permit_job_expansion for the expansion switch test and the demo growing FS by
# expander jobs: both expansion strategies on every release; then a site's cluster (select/cons_tres,
# 4-CPU nodes, partitions left/right sharing n3, accounting enforced, users alice and bob, the service run
# as the operator user elastic: tests/docker/test_site.py) on ELASTIC_DOCKER_SITE_RELEASES (24.11), and
# on 7 nodes the two users' demos at the same time.
# Prints the time each step took. ELASTIC_DOCKER_RELEASES narrows the list.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
RELEASES=${ELASTIC_DOCKER_RELEASES:-"22.05 24.11 26.05"}
SITE_RELEASES=${ELASTIC_DOCKER_SITE_RELEASES:-"24.11"}

if ! command -v debootstrap >/dev/null; then
  echo "docker-ci: apt-get install debootstrap"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
fi
down() { $PY -m slurm_ext cluster down --docker >/dev/null 2>&1 || true; }
down  # the remains of an interrupted run
trap down EXIT

now() { date +%s%N; }
secs() { local d=$(( ($2 - $1) / 100000000 )); printf '%d.%d' $(( d / 10 )) $(( d % 10 )); }
start=$(now)
# Every release's image at once (a build mostly waits on Debian's archive); each line says how long its
# own build took.
echo "=== images ==="
built=$(mktemp)
$PY -m slurm_ext cluster images $(for r in $RELEASES; do printf -- '--release %s ' "$r"; done) | tee "$built"
images_done=$(now)
rows=()
for r in $RELEASES; do
  echo "=== Slurm $r ==="
  build_s=$(awk -v r="$r:" '$1 == r { print $(NF-1) }' "$built")
  t1=$(now)
  $PY -m slurm_ext cluster up --docker --release "$r" --nodes 4
  t2=$(now)
  ELASTIC_DOCKER=1 ELASTIC_DOCKER_RELEASE="$r" $PY -m pytest -q -m docker tests/docker
  t3=$(now)
  $PY -m slurm_ext cluster down --docker
  t4=$(now)
  only="expansion or release or demo"
  $PY -m slurm_ext cluster up --docker --release "$r" --nodes 4 --no-expansion
  ELASTIC_DOCKER=1 ELASTIC_DOCKER_RELEASE="$r" ELASTIC_DOCKER_EXPANSION=0 \
    $PY -m pytest -q -m docker tests/docker -k "$only"
  $PY -m slurm_ext cluster down --docker
  t5=$(now)
  rows+=("$(printf '%-7s %9s %9s %9s %9s %11s' "$r" "$build_s" "$(secs "$t1" "$t2")" \
    "$(secs "$t2" "$t3")" "$(secs "$t3" "$t4")" "$(secs "$t4" "$t5")")")
done
for r in $SITE_RELEASES; do
  [[ " $RELEASES " == *" $r "* ]] || continue
  echo "=== Slurm $r: a site's cluster (select/cons_tres, 4-CPU nodes, alice and bob) ==="
  t1=$(now)
  $PY -m slurm_ext cluster up --docker --release "$r" --nodes 4 --profile site
  ELASTIC_DOCKER=1 ELASTIC_DOCKER_RELEASE="$r" ELASTIC_DOCKER_SELECT=cons_tres \
    $PY -m pytest -q -m docker tests/docker/test_site.py
  $PY -m slurm_ext cluster down --docker
  # 7 nodes, the site's service and EJB manager running as elastic: alice's DMR demo and bob's EJB
  # demo at the same time, each in a partition
  $PY -m slurm_ext cluster up --docker --release "$r" --nodes 7 --profile site --start-units
  ELASTIC_DOCKER=1 ELASTIC_DOCKER_RELEASE="$r" ELASTIC_DOCKER_SELECT=cons_tres ELASTIC_DOCKER_NODES=7 \
    $PY -m pytest -q -m docker tests/docker/test_site.py -k same_time
  $PY -m slurm_ext cluster down --docker
  echo "site cluster on $r took $(secs "$t1" "$(now)") s"
done
echo
printf '%-7s %9s %9s %9s %9s %11s\n' release "build s" "up s" "tests s" "down s" "no-exp s"
printf '%s\n' "${rows[@]}"
rm -f "$built"
echo "images (built at the same time) took $(secs "$start" "$images_done") s"
echo "docker CI took $(secs "$start" "$(now)") s"
