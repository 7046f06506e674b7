#!/usr/bin/env bash
# Runs a real OpenStack Placement (Debian's placement-api, under uwsgi) on loopback for tests and
# benchmarks: SQLite database, auth_strategy = noauth2 (send `X-Auth-Token: admin`), nothing
# written outside DIR. The packages come from scripts/ci-services.sh.
#
#   scripts/placement.sh up DIR [PORT]   starts it (PORT default 8778); prints its URL last
#   scripts/placement.sh down DIR        stops the one started in DIR (by its pid file)
#
# `up` is idempotent for a DIR whose Placement still answers. Logs go to DIR/placement.log.
set -euo pipefail

usage() {
  echo "usage: $0 up DIR [PORT] | down DIR" >&2
  exit 2
}
say() { echo "placement.sh: $*" >&2; }

[ $# -ge 2 ] || usage
ACTION=$1
mkdir -p "$2"
DIR=$(cd "$2" && pwd)
PORT=${3:-8778}
URL="http://127.0.0.1:$PORT"
PIDFILE="$DIR/placement.pid"

answers() { curl -fsS -m 3 "$URL/" 2>/dev/null | grep -q '"versions"'; }
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

up() {
  [ -x /usr/bin/placement-api ] || { say "placement-api is not installed; run scripts/ci-services.sh as root"; exit 1; }
  if alive && answers; then
    echo "$URL"
    return 0
  fi
  down
  if answers; then
    say "something else already answers on $URL"
    exit 1
  fi
  cat >"$DIR/placement.conf" <<EOF
[DEFAULT]
debug = False
use_stderr = True
[api]
auth_strategy = noauth2
[placement_database]
connection = sqlite:///$DIR/placement.db
sync_on_startup = False
[oslo_policy]
policy_file = $DIR/policy.yaml
policy_dirs = $DIR/policy.d
EOF
  if ! placement-manage --config-file "$DIR/placement.conf" db sync >>"$DIR/placement.log" 2>&1; then
    tail -n 20 "$DIR/placement.log" >&2
    say "db sync failed (log: $DIR/placement.log)"
    exit 1
  fi
  # WAL: readers never wait for the writer. Debian's python3 (not whatever is first on PATH).
  /usr/bin/python3 -c 'import sqlite3, sys; sqlite3.connect(sys.argv[1]).execute("PRAGMA journal_mode=WAL")' \
    "$DIR/placement.db"
  # One process, one thread: SQLite wants a single writer. "Connection: close" because uwsgi's
  # http-socket drops idle keep-alive connections, which clients would otherwise reuse.
  OS_PLACEMENT_CONFIG_DIR="$DIR" setsid uwsgi --plugin python3 --http-socket "127.0.0.1:$PORT" \
    --wsgi-file /usr/bin/placement-api --master --processes 1 --threads 1 --enable-threads \
    --die-on-term --need-app --no-orphans --buffer-size 65535 --add-header "Connection: close" \
    --pidfile "$PIDFILE" --chdir "$DIR" --logto "$DIR/placement.log" \
    </dev/null >>"$DIR/placement.log" 2>&1 &
  local child=$!
  for _ in $(seq 300); do
    if answers; then
      echo "$URL"
      return 0
    fi
    kill -0 "$child" 2>/dev/null || break
    sleep 0.2
  done
  tail -n 30 "$DIR/placement.log" >&2 || true
  say "Placement did not answer on $URL (log: $DIR/placement.log)"
  down
  exit 1
}

case "$ACTION" in
  up) up ;;
  down) down ;;
  *) usage ;;
esac
