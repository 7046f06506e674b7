#!/usr/bin/env bash
# Runs a private RabbitMQ node on loopback for one test, separate from the machine's broker (whose
# /etc/rabbitmq/rabbitmq.conf binds 5672), so that a test may stop and restart it without
# disturbing anyone else. Everything it writes (config, mnesia, logs, pid) stays in DIR.
#
#   scripts/rabbitmq-node.sh up DIR PORT        starts the node, waits until PORT accepts; prints its URL
#   scripts/rabbitmq-node.sh down DIR           stops it (safe to call twice, or for a DIR never started)
#   scripts/rabbitmq-node.sh restart DIR PORT   down, then up (queues and definitions survive in DIR)
#
# The node is named cyborg-test-PORT@localhost and uses PORT+20000 for Erlang distribution, so two
# nodes on different ports never collide. The default guest/guest user works from loopback.
# Needs root (Debian's wrapper drops to the rabbitmq user, who must own DIR).
set -euo pipefail

usage() {
  echo "usage: $0 up DIR PORT | down DIR | restart DIR PORT" >&2
  exit 2
}
say() { echo "rabbitmq-node.sh: $*" >&2; }

[ $# -ge 2 ] || usage
ACTION=$1
mkdir -p "$2"
DIR=$(cd "$2" && pwd)
PORT=${3:-}

# The node's environment; `up` records the port in DIR/port so that `down` needs only DIR.
node_env() {
  local port=$1
  export RABBITMQ_CONFIG_FILE="$DIR/rabbitmq.conf"
  export RABBITMQ_NODENAME="cyborg-test-$port@localhost"
  export RABBITMQ_DIST_PORT=$((port + 20000))
  export RABBITMQ_MNESIA_BASE="$DIR/mnesia"
  export RABBITMQ_LOG_BASE="$DIR/log"
  export RABBITMQ_ENABLED_PLUGINS_FILE="$DIR/enabled_plugins"
  export RABBITMQ_PID_FILE="$DIR/pid"
}

listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

alive() { [ -f "$DIR/pid" ] && kill -0 "$(cat "$DIR/pid")" 2>/dev/null; }

down() {
  [ -f "$DIR/port" ] || return 0
  node_env "$(cat "$DIR/port")"
  if alive; then
    local pid
    pid=$(cat "$DIR/pid")
    rabbitmqctl -q -n "$RABBITMQ_NODENAME" stop >/dev/null 2>&1 || true
    for _ in $(seq 100); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$DIR/pid"
}

up() {
  [ -n "$PORT" ] || usage
  command -v rabbitmq-server >/dev/null || { say "rabbitmq-server is not installed"; exit 1; }
  if [ -f "$DIR/port" ] && [ "$(cat "$DIR/port")" != "$PORT" ]; then down; fi
  if alive && listening "$PORT"; then
    echo "amqp://guest:guest@127.0.0.1:$PORT/"
    return 0
  fi
  if listening "$PORT"; then
    say "something else already listens on 127.0.0.1:$PORT"
    exit 1
  fi
  echo "$PORT" >"$DIR/port"
  echo "listeners.tcp.1 = 127.0.0.1:$PORT" >"$DIR/rabbitmq.conf"
  echo "[]." >"$DIR/enabled_plugins"
  mkdir -p "$DIR/mnesia" "$DIR/log"
  chown -R rabbitmq:rabbitmq "$DIR"
  node_env "$PORT"
  rabbitmq-server -detached >>"$DIR/start.log" 2>&1
  # 60 s: an Erlang node boots in a few seconds, but far slower on a loaded 2-core machine.
  for _ in $(seq 600); do
    if listening "$PORT"; then
      echo "amqp://guest:guest@127.0.0.1:$PORT/"
      return 0
    fi
    sleep 0.1
  done
  tail -n 30 "$DIR/start.log" "$DIR/log/"*.log >&2 2>/dev/null || true
  say "RabbitMQ did not listen on 127.0.0.1:$PORT within 60 s (logs: $DIR/log)"
  down
  exit 1
}

case "$ACTION" in
  up) up ;;
  down) down ;;
  restart)
    down
    up
    ;;
  *) usage ;;
esac
