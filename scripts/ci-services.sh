#!/usr/bin/env bash
# Makes sure this machine has what the tests talk to, and does nothing for what already works:
#   - PostgreSQL on 127.0.0.1:5432, user postgres without a password (trust from 127.0.0.1);
#   - MariaDB on 127.0.0.1:3306, user root with an empty password over TCP;
#   - RabbitMQ on 127.0.0.1:5672, user guest/guest (the broker's default, loopback only), and a
#     working rabbitmqctl, with which the tests make a fresh vhost per run;
#   - galera-4 and rsync, for the private Galera cluster of the cluster tests (scripts/galera.sh;
#     scripts/rabbitmq-cluster.sh needs only the rabbitmq-server package);
#   - the real OpenStack client with the accelerator plugin (Debian's python3-openstackclient and
#     python3-cyborgclient), and real Nova's Cyborg client (python3-nova), which the end-to-end
#     tests drive;
#   - real OpenStack Placement (Debian's placement-api under uwsgi), installed but not started:
#     each test run starts its own on a free loopback port with scripts/placement.sh;
#   - real OpenStack Glance (Debian's glance-api), installed but not started (scripts/glance.sh);
#   - real OpenStack Keystone (Debian's keystone), installed but not started (scripts/keystone.sh);
#   - real OpenStack Barbican (Debian's barbican-api), installed but not started (scripts/barbican.sh),
#     with openssl and Debian's python3-cursive, which the signed-image tests cross-check against;
#   - Prometheus and promtool (Debian's prometheus), installed but not started: the metrics tests
#     start their own on a free loopback port (scripts/prometheus.sh);
#   - oslo.messaging (Debian's python3-oslo.messaging), whose notification listener the tests run;
#   - systemd-analyze (Debian's systemd), with which the tests verify etc/systemd/*.service;
#   - a headless browser (Debian's chromium), which test/web/ drives through playwright-core.
# A server that is installed but stopped is started; one that is not installed is installed from
# Debian's packages and initialised (there is no systemd, and policy-rc.d stops packages from
# starting their own services). Run as root: `bash scripts/ci-services.sh` (or name some: `… barbican`). Used by .ci/run.
# Prints no secrets: the only credentials involved are the empty/trust/guest ones above.
set -euo pipefail

LOG_DIR=$(mktemp -d "${TMPDIR:-/tmp}/cyborg-ci-services.XXXXXX")
APT_UPDATED=0

log() { printf 'ci-services: %s\n' "$*"; }
die() {
  printf 'ci-services: error: %s\n' "$*" >&2
  exit 1
}

# Runs a command quietly; on failure shows the end of its output and stops.
quiet() {
  local name=$1
  shift
  if ! "$@" >"$LOG_DIR/$name.log" 2>&1; then
    tail -n 40 "$LOG_DIR/$name.log" >&2 || true
    die "$name failed (full output: $LOG_DIR/$name.log)"
  fi
}

apt_install() {
  export DEBIAN_FRONTEND=noninteractive
  if [ "$APT_UPDATED" = 0 ]; then
    log "apt-get update"
    # A failed update is not fatal: the cached package lists may still do.
    apt-get update -qq >"$LOG_DIR/apt-update.log" 2>&1 || log "warning: apt-get update failed; using the cached package lists"
    APT_UPDATED=1
  fi
  log "apt-get install $*"
  quiet apt-install apt-get install -y -q --no-install-recommends "$@"
}

# wait_for DESCRIPTION SECONDS COMMAND...: polls COMMAND every 0.2 s.
wait_for() {
  local what=$1 seconds=$2
  shift 2
  local i
  for ((i = 0; i < seconds * 5; i++)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.2
  done
  die "$what is not ready after ${seconds}s"
}

# ---------------------------------------------------------------- PostgreSQL
pg_ok() { PGCONNECT_TIMEOUT=3 psql -h 127.0.0.1 -p 5432 -U postgres -d postgres -w -Atqc 'select 1'; }
pg_ready() { pg_isready -q -h 127.0.0.1 -p 5432; }

ensure_postgres() {
  if command -v psql >/dev/null && pg_ok >/dev/null 2>&1; then
    log "PostgreSQL: accepting connections on 127.0.0.1:5432"
    return
  fi
  if ! ls /etc/postgresql/*/main/postgresql.conf >/dev/null 2>&1; then
    apt_install postgresql
  fi
  local version
  version=$(ls /etc/postgresql | sort -V | tail -n 1)
  [ -n "$version" ] || die "PostgreSQL: no version under /etc/postgresql"
  if [ ! -f "/etc/postgresql/$version/main/postgresql.conf" ]; then
    log "PostgreSQL $version: creating cluster main"
    quiet pg-createcluster pg_createcluster "$version" main
  fi
  if ! pg_ready; then
    log "PostgreSQL $version: starting cluster main"
    quiet pg-start pg_ctlcluster --skip-systemctl-redirect "$version" main start
    wait_for "PostgreSQL" 60 pg_ready
  fi
  if ! pg_ok >/dev/null 2>&1; then
    local hba="/etc/postgresql/$version/main/pg_hba.conf"
    log "PostgreSQL: trusting connections from 127.0.0.1 (first line of $hba)"
    grep -q '^host all all 127.0.0.1/32 trust$' "$hba" || sed -i '1i host all all 127.0.0.1/32 trust' "$hba"
    quiet pg-reload pg_ctlcluster --skip-systemctl-redirect "$version" main reload
    wait_for "PostgreSQL (user postgres from 127.0.0.1)" 30 pg_ok
  fi
  log "PostgreSQL $version: ready on 127.0.0.1:5432"
}

# ---------------------------------------------------------------- MariaDB
my_tcp_ok() { mariadb --protocol=tcp -h 127.0.0.1 -P 3306 -u root --password= --connect-timeout=3 -e 'select 1'; }
# `mariadb-admin ping` succeeds when the server answers, even if it refuses the login.
my_up() { mariadb-admin --connect-timeout=3 ping; }

ensure_mariadb() {
  if command -v mariadb >/dev/null && my_tcp_ok >/dev/null 2>&1; then
    log "MariaDB: accepting connections on 127.0.0.1:3306"
    return
  fi
  [ -x /usr/sbin/mariadbd ] || apt_install mariadb-server
  if ! my_up >/dev/null 2>&1; then
    install -d -o mysql -g mysql -m 0755 /run/mysqld
    if [ ! -d /var/lib/mysql/mysql ]; then
      log "MariaDB: initialising /var/lib/mysql"
      quiet mariadb-install-db mariadb-install-db --user=mysql --datadir=/var/lib/mysql \
        --auth-root-authentication-method=normal --skip-test-db
    fi
    log "MariaDB: starting"
    # The pid file keeps a mariadbd of somebody else's (another datadir and port) from passing for ours.
    start-stop-daemon --start --oknodo --background --pidfile /run/mysqld/mysqld.pid \
      --exec /usr/sbin/mariadbd -- --user=mysql
    wait_for "MariaDB" 60 my_up
  fi
  if ! my_tcp_ok >/dev/null 2>&1; then
    # Debian's root@localhost authenticates by unix socket, which works for root here; TCP logins
    # come from 127.0.0.1, so give that host a root account with an empty password.
    log "MariaDB: allowing root from 127.0.0.1 with an empty password"
    quiet mariadb-grant mariadb -u root -e "CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY '';
      ALTER USER 'root'@'127.0.0.1' IDENTIFIED BY '';
      GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;
      FLUSH PRIVILEGES;"
  fi
  if ! my_tcp_ok >/dev/null 2>&1; then
    # Without skip-name-resolve, a TCP login from 127.0.0.1 may match root@localhost instead.
    log "MariaDB: also accepting an empty password for root@localhost"
    quiet mariadb-grant-localhost mariadb -u root -e "ALTER USER 'root'@'localhost'
      IDENTIFIED VIA unix_socket OR mysql_native_password USING PASSWORD(''); FLUSH PRIVILEGES;"
  fi
  wait_for "MariaDB (root over TCP)" 15 my_tcp_ok
  log "MariaDB: ready on 127.0.0.1:3306"
}

# ---------------------------------------------------------------- RabbitMQ
rmq_port_open() { timeout 3 bash -c 'exec 3<>/dev/tcp/127.0.0.1/5672' 2>/dev/null; }
rmq_ctl_ok() { timeout 30 rabbitmqctl -q await_startup; }

ensure_rabbitmq() {
  if command -v rabbitmqctl >/dev/null && rmq_port_open && rmq_ctl_ok >/dev/null 2>&1; then
    log "RabbitMQ: accepting connections on 127.0.0.1:5672"
  else
    [ -x /usr/sbin/rabbitmq-server ] || apt_install rabbitmq-server
    if ! rmq_port_open; then
      log "RabbitMQ: starting"
      # The Debian wrapper drops privileges to the rabbitmq user and returns once the VM is forked.
      quiet rabbitmq-start rabbitmq-server -detached
      wait_for "RabbitMQ (port 5672)" 90 rmq_port_open
    fi
    quiet rabbitmq-await-startup timeout 120 rabbitmqctl await_startup
  fi
  if ! rabbitmqctl -q authenticate_user guest guest >/dev/null 2>&1; then
    log "RabbitMQ: restoring the default guest/guest user"
    rabbitmqctl -q add_user guest guest >/dev/null 2>&1 || quiet rabbitmq-guest-password rabbitmqctl change_password guest guest
    quiet rabbitmq-guest-permissions rabbitmqctl set_permissions -p / guest '.*' '.*' '.*'
    quiet rabbitmq-guest-tags rabbitmqctl set_user_tags guest administrator
  fi
  log "RabbitMQ $(rabbitmqctl -q version 2>/dev/null || echo '?'): ready on 127.0.0.1:5672"
}

# ---------------------------------------------------------------- OpenStack clients
ensure_openstack_clients() {
  local missing=()
  [ -x /usr/bin/openstack ] || missing+=(python3-openstackclient python3-cyborgclient)
  if [ ${#missing[@]} -eq 0 ] && ! dpkg-query -W -f='${Status}' python3-cyborgclient 2>/dev/null | grep -q 'ok installed'; then
    missing+=(python3-cyborgclient)
  fi
  if [ ${#missing[@]} -gt 0 ]; then apt_install "${missing[@]}"; fi
  [ -x /usr/bin/openstack ] || die "/usr/bin/openstack is still missing"
  log "OpenStack client: $(/usr/bin/openstack --version 2>&1 | head -n 1)"
  # Real Nova's Cyborg client (nova.accelerator.cyborg), which test/e2e/nova-client.py drives.
  if ! dpkg-query -W -f='${Status}' python3-nova 2>/dev/null | grep -q 'ok installed'; then apt_install python3-nova; fi
  log "Nova client: python3-nova $(dpkg-query -W -f='${Version}' python3-nova)"
}

# ---------------------------------------------------------------- Placement
ensure_placement() {
  local p missing=()
  for p in placement-api python3-placement uwsgi-plugin-python3; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    # No dbconfig database and no Keystone endpoint registration: the tests configure it themselves.
    printf '%s\n' \
      'placement-common placement-common/dbconfig-install boolean false' \
      'placement-api placement/register-endpoint boolean false' | debconf-set-selections
    apt_install "${missing[@]}"
  fi
  [ -x /usr/bin/placement-api ] || die "/usr/bin/placement-api is still missing"
  log "Placement: $(dpkg-query -W -f='${Version}' placement-api) installed (started per test run)"
}

# ---------------------------------------------------------------- Glance
ensure_glance() {
  if ! dpkg-query -W -f='${Status}' glance-api 2>/dev/null | grep -q 'ok installed'; then
    # No dbconfig database and no Keystone endpoint registration: scripts/glance.sh configures it.
    printf '%s\n' \
      'glance-common glance/configure_db boolean false' \
      'glance-api glance/register-endpoint boolean false' | debconf-set-selections
    apt_install glance-api
  fi
  [ -x /usr/bin/glance-api ] || die "/usr/bin/glance-api is still missing"
  log "Glance: $(dpkg-query -W -f='${Version}' glance-api) installed (started per test run)"
}

# ---------------------------------------------------------------- Keystone
ensure_keystone() {
  local p missing=()
  for p in keystone uwsgi-plugin-python3; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    # No dbconfig database, no admin tenant and no endpoint registration: scripts/keystone.sh
    # bootstraps its own SQLite database per run.
    printf '%s\n' \
      'keystone keystone/dbconfig-install boolean false' \
      'keystone keystone/configure_db boolean false' \
      'keystone keystone/create-admin-tenant boolean false' \
      'keystone keystone/register-endpoint boolean false' | debconf-set-selections
    apt_install "${missing[@]}"
  fi
  [ -x /usr/bin/keystone-wsgi-public ] || die "/usr/bin/keystone-wsgi-public is still missing"
  log "Keystone: $(dpkg-query -W -f='${Version}' keystone) installed (started per test run)"
}

# ---------------------------------------------------------------- Barbican
ensure_barbican() {
  local p missing=()
  for p in barbican-api python3-cursive openssl uwsgi-plugin-python3; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    # No dbconfig database, no RabbitMQ, no keystone_authtoken and no endpoint registration:
    # scripts/barbican.sh writes its own configuration per run.
    printf '%s\n' \
      'barbican-common barbican/configure_db boolean false' \
      'barbican-common barbican/configure_rabbit boolean false' \
      'barbican-common barbican/configure_ksat boolean false' \
      'barbican-api barbican/configure_api-endpoint boolean false' | debconf-set-selections
    apt_install "${missing[@]}"
  fi
  [ -x /usr/bin/barbican-wsgi-api ] || die "/usr/bin/barbican-wsgi-api is still missing"
  log "Barbican: $(dpkg-query -W -f='${Version}' barbican-api) installed (started per test run)"
}

# ---------------------------------------------------------------- Prometheus, oslo.messaging
# The cluster tests (test/cluster/, `npm run test:cluster`) start their own nodes: Galera needs its
# provider (galera-4) and rsync for the state transfer of a joining node (scripts/galera.sh).
ensure_cluster_tools() {
  local missing=()
  [ -f /usr/lib/galera/libgalera_smm.so ] || missing+=(galera-4)
  command -v rsync >/dev/null || missing+=(rsync)
  if [ ${#missing[@]} -gt 0 ]; then apt_install "${missing[@]}"; fi
  log "cluster tools: galera-4 $(dpkg-query -W -f='${Version}' galera-4), $(rsync --version | head -1)"
}

ensure_observers() {
  local p missing=()
  for p in prometheus python3-oslo.messaging; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then apt_install "${missing[@]}"; fi
  [ -x /usr/bin/prometheus ] && [ -x /usr/bin/promtool ] || die "prometheus or promtool is still missing"
  log "Prometheus: $(dpkg-query -W -f='${Version}' prometheus) installed (started per test run)"
  log "oslo.messaging: python3-oslo.messaging $(dpkg-query -W -f='${Version}' python3-oslo.messaging)"
}

# ---------------------------------------------------------------- systemd-analyze
# test/main/systemd-units.test.ts runs `systemd-analyze verify` on the service units; nothing is
# started (systemd is not PID 1 here).
ensure_systemd_analyze() {
  command -v systemd-analyze >/dev/null || apt_install systemd
  command -v systemd-analyze >/dev/null || die "systemd-analyze is still missing"
  log "systemd-analyze: $(systemd-analyze --version | head -n 1)"
}

# ---------------------------------------------------------------- Chromium
# test/web/ drives Debian's chromium through playwright-core (`executablePath`): no browser is
# downloaded (`playwright install` is never run).
ensure_chromium() {
  [ -x /usr/bin/chromium ] || apt_install chromium
  [ -x /usr/bin/chromium ] || die "/usr/bin/chromium is still missing"
  log "Chromium: $(dpkg-query -W -f='${Version}' chromium) installed"
}

# With arguments, only those: `bash scripts/ci-services.sh barbican glance`.
if [ $# -gt 0 ]; then
  for what in "$@"; do
    declare -F "ensure_$what" >/dev/null || die "unknown service $what"
    "ensure_$what"
  done
else
  ensure_postgres
  ensure_mariadb
  ensure_rabbitmq
  ensure_cluster_tools
  ensure_openstack_clients
  ensure_placement
  ensure_glance
  ensure_keystone
  ensure_barbican
  ensure_observers
  ensure_systemd_analyze
  ensure_chromium
fi
rm -rf "$LOG_DIR"
