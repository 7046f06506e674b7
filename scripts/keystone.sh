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

# shellcheck source=lib/loopback-service.sh
. "$(dirname "$0")/lib/loopback-service.sh"
service_args keystone 5000 "$@"
URL="http://127.0.0.1:$PORT/v3"
ADMIN_PASSWORD=${KEYSTONE_ADMIN_PASSWORD:-secret}
answers() { curl -fsS -m 3 "$URL" 2>/dev/null | grep -q '"version"'; }

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
  already_up && return 0
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
  sqlite_wal "$DIR/keystone.db"
  start_uwsgi "OS_KEYSTONE_CONFIG_FILES=$DIR/keystone.conf" /usr/bin/keystone-wsgi-public
}

service_main
