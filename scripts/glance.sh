#!/usr/bin/env bash
# Runs a real OpenStack Glance (Debian's glance-api, eventlet server) on loopback for tests: SQLite
# database, images in DIR/images, no Keystone (the paste pipeline without auth gives an admin
# context). Nothing is written outside DIR. The package comes from scripts/ci-services.sh.
#
#   scripts/glance.sh up DIR [PORT]   starts it (PORT default 9292); prints its URL last
#   scripts/glance.sh down DIR        stops the one started in DIR
set -euo pipefail

usage() {
  echo "usage: $0 up DIR [PORT] | down DIR" >&2
  exit 2
}
say() { echo "glance.sh: $*" >&2; }

[ $# -ge 2 ] || usage
ACTION=$1
mkdir -p "$2"
DIR=$(cd "$2" && pwd)
PORT=${3:-9292}
URL="http://127.0.0.1:$PORT"
PIDFILE="$DIR/glance.pid"

answers() { curl -fsS -m 3 "$URL/v2/images" >/dev/null 2>&1; }
alive() { [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }

down() {
  if alive; then
    local pid
    pid=$(cat "$PIDFILE")
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$PIDFILE"
}

up() {
  [ -x /usr/bin/glance-api ] || { say "glance-api is not installed; run scripts/ci-services.sh as root"; exit 1; }
  if alive && answers; then
    echo "$URL"
    return 0
  fi
  down
  mkdir -p "$DIR/images"
  cat >"$DIR/glance-api.conf" <<CONF
[DEFAULT]
bind_host = 127.0.0.1
bind_port = $PORT
workers = 1
enabled_backends = fs:file
[glance_store]
default_backend = fs
[fs]
filesystem_store_datadir = $DIR/images
[database]
connection = sqlite:///$DIR/glance.db
[paste_deploy]
flavor =
config_file = /etc/glance/glance-api-paste.ini
[oslo_policy]
policy_file = $DIR/policy.yaml
CONF
  if ! glance-manage --config-file "$DIR/glance-api.conf" db_sync >>"$DIR/glance.log" 2>&1; then
    tail -n 20 "$DIR/glance.log" >&2
    say "db sync failed (log: $DIR/glance.log)"
    exit 1
  fi
  setsid glance-api --config-file "$DIR/glance-api.conf" </dev/null >>"$DIR/glance.log" 2>&1 &
  echo $! >"$PIDFILE"
  for _ in $(seq 150); do
    if answers; then
      echo "$URL"
      return 0
    fi
    alive || break
    sleep 0.2
  done
  tail -n 30 "$DIR/glance.log" >&2 || true
  say "Glance did not answer on $URL (log: $DIR/glance.log)"
  down
  exit 1
}

case "$ACTION" in
  up) up ;;
  down) down ;;
  *) usage ;;
esac
