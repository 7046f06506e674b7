#!/usr/bin/env bash
# Runs a real Prometheus (Debian's prometheus package) on loopback for tests and benchmarks: it
# scrapes the targets listed in DIR/targets.json (file service discovery, re-read every second),
# every second, and keeps its data in DIR. The package comes from scripts/ci-services.sh.
#
#   scripts/prometheus.sh up DIR [PORT]   starts it (PORT default 9090); prints its URL last
#   scripts/prometheus.sh down DIR        stops the one started in DIR (by its pid file)
#
# Write DIR/targets.json ([{"targets": ["127.0.0.1:9386"], "labels": {"job": "conductor"}}]) before
# or after `up`: Prometheus picks up changes within a second. Logs go to DIR/prometheus.log.
set -euo pipefail

# shellcheck source=lib/loopback-service.sh
. "$(dirname "$0")/lib/loopback-service.sh"
service_args prometheus 9090 "$@"
URL="http://127.0.0.1:$PORT"
answers() { curl -fsS -m 3 "$URL/-/ready" >/dev/null 2>&1; }

up() {
  [ -x /usr/bin/prometheus ] || { say "prometheus is not installed; run scripts/ci-services.sh as root"; exit 1; }
  already_up && return 0
  [ -f "$DIR/targets.json" ] || echo '[]' >"$DIR/targets.json"
  cat >"$DIR/prometheus.yml" <<EOF2
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: cyborg
    file_sd_configs:
      - files: ['$DIR/targets.json']
        refresh_interval: 1s
EOF2
  setsid /usr/bin/prometheus --config.file="$DIR/prometheus.yml" --storage.tsdb.path="$DIR/data" \
    --web.listen-address="127.0.0.1:$PORT" --web.enable-lifecycle \
    </dev/null >>"$DIR/prometheus.log" 2>&1 &
  echo $! >"$PIDFILE"
  wait_until_answers "$!"
}

service_main
