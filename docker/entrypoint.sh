#!/usr/bin/env bash
# Entrypoint of every container of the compose cluster: `elastic-slurm ROLE`.
#   init      one-shot: munge key and DB password (first start only), then slurm.conf & co. rendered
#             from conf/templates by the project's own code (mounted at /src) into the shared volumes
#   mariadb   MariaDB with the accounting database;  slurmdbd, slurmctld, slurmd;  login: munged only
set -euo pipefail
ETC=/etc/slurm            # slurm.conf, cgroup.conf: the `etc` volume, read-only except for init
SECRET=/run/secret        # slurmdbd.conf and db.env: the `secret` volume (init, mariadb, slurmdbd only)
log() { echo "[$(hostname) $1] ${*:2}" >&2; }

wait_until() {  # wait_until SECONDS WHAT CMD...
  local deadline=$(( SECONDS + $1 )) what=$2; shift 2
  until "$@" >/dev/null 2>&1; do
    if (( SECONDS >= deadline )); then log wait "gave up waiting for $what"; exit 1; fi
    sleep 0.3
  done
}

start_munge() {
  mkdir -p /run/munge && chown munge:munge /run/munge
  runuser -u munge -- munged
  wait_until 10 munged bash -c 'munge -n </dev/null | unmunge'
}

# Two ordinary users, as a site has them (same ids in every container: Slurm passes uids); their
# home is the volume every node mounts, where their jobs write.
add_users() {
  local uid=2001 user
  for user in alice bob; do
    id "$user" >/dev/null 2>&1 || useradd -u "$uid" -U -M -d "/shared/$user" -s /bin/bash "$user"
    uid=$(( uid + 1 ))
  done
}

# The toolkit's commands as `pip install` would make them: the repository is mounted read-only on
# PYTHONPATH (never installed in an image, so an image serves any checkout of the same recipe).
install_commands() {
  local name module
  for pair in slurm-ext:slurm_ext ejb:ejb ejb-submit:ejb.submit dmr-run:dmr dmr-config:dmr.toolchain; do
    name=${pair%%:*} module=${pair#*:}
    printf '#!/bin/sh\nexec python3 -m %s "$@"\n' "$module" >"/usr/local/bin/$name"
    chmod 755 "/usr/local/bin/$name"
  done
  # apps/ is installed as the package dmr_apps (pyproject.toml): the same name on PYTHONPATH here
  mkdir -p /opt/elastic-apps && ln -sfn /opt/elastic-slurm/apps /opt/elastic-apps/dmr_apps
}

role=${1:-login}
case "$role" in
  init)
    if [ ! -s /etc/munge/munge.key ]; then
      mungekey -c -f -k /etc/munge/munge.key
      chown munge:munge /etc/munge/munge.key && chmod 400 /etc/munge/munge.key
      log init "generated the munge key"
    fi
    if [ ! -s "$SECRET/db_password" ]; then
      (umask 077; python3 -c 'import secrets; print(secrets.token_hex(24))' >"$SECRET/db_password")
      log init "generated the database password"
    fi
    PYTHONPATH=/src python3 /src/docker/render_config.py --etc "$ETC" --secret "$SECRET"
    ;;
  mariadb)
    # shellcheck source=/dev/null
    . "$SECRET/db.env"
    mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld /var/lib/mysql
    [ -d /var/lib/mysql/mysql ] || mariadb-install-db --user=mysql --datadir=/var/lib/mysql \
      --auth-root-authentication-method=socket --skip-test-db >/dev/null
    extra=()  # MariaDB 11.8 (sid): Slurm does not support snapshot isolation
    mariadbd --verbose --help 2>/dev/null | grep -q '^innodb-snapshot-isolation' \
      && extra+=(--skip-innodb-snapshot-isolation)
    mariadbd --user=mysql --bind-address=0.0.0.0 --port="$DB_PORT" --innodb-buffer-pool-size=128M \
      --innodb-lock-wait-timeout=900 "${extra[@]}" &
    pid=$!
    trap 'kill -TERM $pid' TERM INT
    wait_until 60 mariadbd mariadb -uroot -e 'select 1'
    mariadb -uroot -e "CREATE DATABASE IF NOT EXISTS \`$DB_NAME\`;
      CREATE USER IF NOT EXISTS '$DB_USER'@'%' IDENTIFIED BY '$DB_PASSWORD';
      ALTER USER '$DB_USER'@'%' IDENTIFIED BY '$DB_PASSWORD';
      GRANT ALL ON \`$DB_NAME\`.* TO '$DB_USER'@'%';"
    log mariadb "ready"
    wait $pid
    ;;
  slurmdbd)
    # shellcheck source=/dev/null
    . "$SECRET/db.env"
    start_munge
    mkdir -p "$STATE_DIR/run" "$STATE_DIR/log"
    wait_until 60 mariadb mariadb -h mariadb -P "$DB_PORT" -u "$DB_USER" -p"$DB_PASSWORD" --skip-ssl -e 'select 1'
    # slurmdbd reads slurmdbd.conf (root's, mode 600) beside SLURM_CONF: a private directory with both.
    mkdir -p /run/slurmdbd-etc
    install -m 600 "$SECRET/slurmdbd.conf" /run/slurmdbd-etc/slurmdbd.conf
    ln -sf "$ETC/slurm.conf" /run/slurmdbd-etc/slurm.conf
    SLURM_CONF=/run/slurmdbd-etc/slurm.conf exec slurmdbd -D
    ;;
  slurmctld)
    add_users
    start_munge
    state=$(sed -n 's/^StateSaveLocation=//p' "$ETC/slurm.conf")
    mkdir -p "$state" "$(dirname "$state")/run" "$(dirname "$state")/log"
    cluster=$(sed -n 's/^ClusterName=//p' "$ETC/slurm.conf")
    wait_until 60 slurmdbd sacctmgr -n list cluster
    sacctmgr -n -P list cluster format=cluster | grep -qx "$cluster" || sacctmgr -i add cluster "$cluster" >/dev/null
    exec slurmctld -D
    ;;
  slurmd)
    install_commands
    add_users
    start_munge
    state=$(sed -n 's/^StateSaveLocation=//p' "$ETC/slurm.conf")
    base=$(dirname "$state")
    mkdir -p "$base/spool/$(hostname)" "$base/tmp/$(hostname)" "$base/run" "$base/log"
    exec slurmd -D
    ;;
  login)
    install_commands
    add_users
    for user in alice bob; do  # their homes, on the shared volume
      install -d -o "$user" -g "$user" "/shared/$user"
    done
    # libdmr for this image's Python, into the volume every node mounts (DMR_LIBDIR, compose file)
    if python3 -m dmr.toolchain --build "$DMR_LIBDIR" >/dev/null; then
      log login "built libdmr in $DMR_LIBDIR"
    else
      log login "could not build libdmr: C and Fortran programs cannot link it"
    fi
    start_munge
    log login "ready"
    trap 'exit 0' TERM INT
    sleep infinity &
    wait
    ;;
  *)
    "$@"
    ;;
esac
