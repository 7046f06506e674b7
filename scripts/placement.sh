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

# shellcheck source=lib/loopback-service.sh
. "$(dirname "$0")/lib/loopback-service.sh"
service_args placement 8778 "$@"
URL="http://127.0.0.1:$PORT"
answers() { curl -fsS -m 3 "$URL/" 2>/dev/null | grep -q '"versions"'; }

up() {
  [ -x /usr/bin/placement-api ] || { say "placement-api is not installed; run scripts/ci-services.sh as root"; exit 1; }
  already_up && return 0
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
  sqlite_wal "$DIR/placement.db"
  start_uwsgi "OS_PLACEMENT_CONFIG_DIR=$DIR" /usr/bin/placement-api
}

service_main
