#!/usr/bin/env bash
# Runs a real OpenStack Keystone (Debian's keystone, under uwsgi) on loopback for tests and
# benchmarks: SQLite database in WAL mode, fernet tokens, nothing written outside DIR. The
# package comes from scripts/ci-services.sh.
#
#   scripts/keystone.sh up DIR [PORT]   starts it (PORT default 5000); prints its v3 URL last
#   scripts/keystone.sh down DIR        stops the one started in DIR (by its pid file)
#
# `up` bootstraps DIR on first use: user admin (password $KEYSTONE_ADMIN_PASSWORD, default
# secret) with role admin on project admin, domain Default, region RegionOne, and the identity
# endpoint in the catalog. It is idempotent for a DIR whose Keystone still answers; a stopped
# one is started again on the same database. Logs go to DIR/keystone.log.
set -euo pipefail

usage() {
  echo "usage: $0 up DIR [PORT] | down DIR" >&2
  exit 2
}
say() { echo "keystone.sh: $*" >&2; }

[ $# -ge 2 ] || usage
ACTION=$1
mkdir -p "$2"
DIR=$(cd "$2" && pwd)
PORT=${3:-5000}
URL="http://127.0.0.1:$PORT/v3"
PIDFILE="$DIR/keystone.pid"
ADMIN_PASSWORD=${KEYSTONE_ADMIN_PASSWORD:-secret}

answers() { curl -fsS -m 3 "$URL" 2>/dev/null | grep -q '"version"'; }
alive() { [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }

down() {
  if ! alive; then
    rm -f "$PIDFILE"
    return 0
  fi
  local pid
  pid=$(cat "$PIDFILE")
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 50); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$PIDFILE"
}

# First use of DIR: schema, fernet and credential keys, then the admin user and the catalog.
bootstrap() {
  local manage=(keystone-manage --config-file "$DIR/keystone.conf")
  mkdir -p "$DIR/fernet-keys" "$DIR/credential-keys"
  local me group
  me=$(id -un)
  group=$(id -gn)
  if ! {
    "${manage[@]}" db_sync &&
      "${manage[@]}" fernet_setup --keystone-user "$me" --keystone-group "$group" &&
      "${manage[@]}" credential_setup --keystone-user "$me" --keystone-group "$group" &&
      "${manage[@]}" bootstrap --bootstrap-password "$ADMIN_PASSWORD" --bootstrap-region-id RegionOne \
        --bootstrap-admin-url "$URL" --bootstrap-internal-url "$URL" --bootstrap-public-url "$URL"
  } >>"$DIR/keystone.log" 2>&1; then
    tail -n 20 "$DIR/keystone.log" >&2
    say "bootstrap failed (log: $DIR/keystone.log)"
    exit 1
  fi
  touch "$DIR/bootstrapped"
}

up() {
  [ -x /usr/bin/keystone-wsgi-public ] || { say "keystone is not installed; run scripts/ci-services.sh as root"; exit 1; }
  if alive && answers; then
    echo "$URL"
    return 0
  fi
  down
  if answers; then
    say "something else already answers on $URL"
    exit 1
  fi
  cat >"$DIR/keystone.conf" <<CONF
[DEFAULT]
debug = False
use_stderr = True
[database]
connection = sqlite:///$DIR/keystone.db
[token]
provider = fernet
[fernet_tokens]
key_repository = $DIR/fernet-keys
[fernet_receipts]
key_repository = $DIR/fernet-keys
[credential]
key_repository = $DIR/credential-keys
[oslo_policy]
policy_file = $DIR/policy.yaml
policy_dirs = $DIR/policy.d
CONF
  [ -f "$DIR/bootstrapped" ] || bootstrap
  # WAL: Keystone opens a second connection inside one request; with the rollback journal a
  # write then waits on itself and fails with "database is locked" after 5 s. Debian's python3.
  /usr/bin/python3 -c 'import sqlite3, sys; sqlite3.connect(sys.argv[1]).execute("PRAGMA journal_mode=WAL")' \
    "$DIR/keystone.db"
  # One process, one thread: SQLite wants a single writer. "Connection: close" because uwsgi's
  # http-socket drops idle keep-alive connections, which clients would otherwise reuse.
  OS_KEYSTONE_CONFIG_FILES="$DIR/keystone.conf" setsid uwsgi --plugin python3 --http-socket "127.0.0.1:$PORT" \
    --wsgi-file /usr/bin/keystone-wsgi-public --master --processes 1 --threads 1 --enable-threads \
    --die-on-term --need-app --no-orphans --buffer-size 65535 --add-header "Connection: close" \
    --pidfile "$PIDFILE" --chdir "$DIR" --logto "$DIR/keystone.log" \
    </dev/null >>"$DIR/keystone.log" 2>&1 &
  local child=$!
  for _ in $(seq 300); do
    if answers; then
      echo "$URL"
      return 0
    fi
    kill -0 "$child" 2>/dev/null || break
    sleep 0.2
  done
  tail -n 30 "$DIR/keystone.log" >&2 || true
  say "Keystone did not answer on $URL (log: $DIR/keystone.log)"
  down
  exit 1
}

case "$ACTION" in
  up) up ;;
  down) down ;;
  *) usage ;;
esac
