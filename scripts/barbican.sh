#!/usr/bin/env bash
# Runs a real OpenStack Barbican (Debian's barbican-api, under uwsgi) on loopback for tests and
# benchmarks: SQLite database in WAL mode, the simple_crypto secret store with a key encryption key
# made for DIR, and Keystone auth (keystonemiddleware) against KEYSTONE_URL (a v3 URL, e.g. from
# scripts/keystone.sh), validating tokens as Keystone's admin user (password
# $KEYSTONE_ADMIN_PASSWORD, default secret). Nothing is written outside DIR. The package comes from
# scripts/ci-services.sh.
#
#   KEYSTONE_URL=http://127.0.0.1:5000/v3 scripts/barbican.sh up DIR [PORT]
#                                      starts it (PORT default 9311); prints its URL last
#   scripts/barbican.sh down DIR       stops the one started in DIR (by its pid file)
#
# Barbican reads its configuration through oslo.config's default search, whose first place is
# ~/.barbican/barbican.conf: the service runs with HOME=DIR so that DIR/.barbican/barbican.conf
# wins over /etc/barbican/barbican.conf. The paste pipeline is the package's
# (/etc/barbican/barbican-api-paste.ini: /v1 behind authtoken). Logs go to DIR/barbican.log.
set -euo pipefail

# shellcheck source=lib/loopback-service.sh
. "$(dirname "$0")/lib/loopback-service.sh"
service_args barbican 9311 "$@"
URL="http://127.0.0.1:$PORT"
# The version document answers without a token.
answers() { curl -fsS -m 3 -H 'accept: application/json' "$URL/" 2>/dev/null | grep -q '"versions"'; }

up() {
  [ -x /usr/bin/barbican-wsgi-api ] || { say "barbican-api is not installed; run scripts/ci-services.sh as root"; exit 1; }
  [ -n "${KEYSTONE_URL:-}" ] || { say "set KEYSTONE_URL to a Keystone v3 URL (scripts/keystone.sh)"; exit 1; }
  already_up && return 0
  mkdir -p "$DIR/.barbican"
  # One key encryption key per DIR (32 random bytes, base64), kept across restarts of the same DIR.
  [ -f "$DIR/kek" ] || head -c 32 /dev/urandom | base64 >"$DIR/kek"
  chmod 600 "$DIR/kek"
  cat >"$DIR/.barbican/barbican.conf" <<CONF
[DEFAULT]
debug = False
use_stderr = True
host_href = $URL
sql_connection = sqlite:///$DIR/barbican.db
db_auto_create = False
[secretstore]
enabled_secretstore_plugins = store_crypto
[crypto]
enabled_crypto_plugins = simple_crypto
[simple_crypto_plugin]
kek = $(cat "$DIR/kek")
[keystone_authtoken]
www_authenticate_uri = $KEYSTONE_URL
auth_url = $KEYSTONE_URL
auth_type = password
username = admin
password = ${KEYSTONE_ADMIN_PASSWORD:-secret}
project_name = admin
user_domain_name = Default
project_domain_name = Default
[oslo_policy]
policy_file = $DIR/policy.yaml
policy_dirs = $DIR/policy.d
CONF
  chmod 600 "$DIR/.barbican/barbican.conf"
  if ! HOME=$DIR barbican-manage db upgrade >>"$DIR/barbican.log" 2>&1; then
    tail -n 20 "$DIR/barbican.log" >&2
    say "db upgrade failed (log: $DIR/barbican.log)"
    exit 1
  fi
  sqlite_wal "$DIR/barbican.db"
  start_uwsgi "HOME=$DIR" /usr/bin/barbican-wsgi-api
}

service_main
