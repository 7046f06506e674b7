#!/usr/bin/env bash
# Runs a real OpenStack Glance (Debian's glance-api, eventlet server) on loopback for tests: SQLite
# database, images in DIR/images, no Keystone (the paste pipeline without auth gives an admin
# context). Nothing is written outside DIR. The package comes from scripts/ci-services.sh.
#
#   scripts/glance.sh up DIR [PORT]   starts it (PORT default 9292); prints its URL last
#   scripts/glance.sh down DIR        stops the one started in DIR
set -euo pipefail

# shellcheck source=lib/loopback-service.sh
. "$(dirname "$0")/lib/loopback-service.sh"
service_args glance 9292 "$@"
URL="http://127.0.0.1:$PORT"
answers() { curl -fsS -m 3 "$URL/v2/images" >/dev/null 2>&1; }

up() {
  [ -x /usr/bin/glance-api ] || { say "glance-api is not installed; run scripts/ci-services.sh as root"; exit 1; }
  already_up && return 0
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
  wait_until_answers "$!"
}

service_main
