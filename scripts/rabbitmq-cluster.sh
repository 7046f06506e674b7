#!/usr/bin/env bash
# Runs a private 3-node RabbitMQ cluster on loopback, for the tests of test/cluster/ (quorum queues,
# failover), separate from the machine's broker on 5672: its own node names, ports, Erlang cookie,
# data and logs, all in DIR. Nothing reads /var/lib/rabbitmq/.erlang.cookie or /root/.erlang.cookie.
#
#   scripts/rabbitmq-cluster.sh up DIR [PORT]   a fresh cluster (DIR's old node data is wiped) on PORT,
#                                               PORT+1, PORT+2 (default 5701-5703); waits until the
#                                               cluster has 3 running nodes; prints the transport URL
#                                               listing every node
#   scripts/rabbitmq-cluster.sh down DIR        stops every node (safe to call twice)
#   scripts/rabbitmq-cluster.sh stop DIR N      stops node N (1-3) gracefully, for fault tests
#   scripts/rabbitmq-cluster.sh kill DIR N      kills node N's Erlang VM (SIGKILL): a crash
#   scripts/rabbitmq-cluster.sh start DIR N     starts node N again; waits until 3 nodes run
#   scripts/rabbitmq-cluster.sh url DIR         prints the transport URL again
#   scripts/rabbitmq-cluster.sh ctl DIR N ARGS  runs rabbitmqctl ARGS against node N (with DIR's cookie)
#
# Node N is cyborg-mq-<its AMQP port>@localhost, with Erlang distribution on AMQP port + 20000.
# The three nodes boot together; nodes 2 and 3 join node 1 during their boot through classic peer
# discovery, retrying until node 1 answers (no stop_app/join_cluster/start_app round, which costs
# a boot more), with `join_cluster` as a fallback. The
# default guest/guest user works from loopback. Needs root (nodes run as the rabbitmq user).
set -euo pipefail

usage() {
  echo "usage: $0 up DIR [PORT] | down DIR | stop DIR N | kill DIR N | start DIR N | url DIR | ctl DIR N ARGS…" >&2
  exit 2
}
say() { echo "rabbitmq-cluster.sh: $*" >&2; }

[ $# -ge 2 ] || usage
ACTION=$1
mkdir -p "$2"
DIR=$(cd "$2" && pwd)
ARG=${3:-}
SERVER=/usr/lib/rabbitmq/bin/rabbitmq-server
CTL=/usr/lib/rabbitmq/bin/rabbitmqctl

base_port() { cat "$DIR/port"; }
node_port() { echo $(($(base_port) + $1 - 1)); }
node_name() { echo "cyborg-mq-$(node_port "$1")@localhost"; }

# Runs a RabbitMQ program as the rabbitmq user for node N, with HOME=DIR so that the cookie is
# DIR/.erlang.cookie, and every path of the node under DIR/nN.
as_node() {
  local n=$1 port
  shift
  port=$(node_port "$n")
  runuser -u rabbitmq -- env HOME="$DIR" \
    RABBITMQ_CONF_ENV_FILE="$DIR/rabbitmq-env.conf" \
    RABBITMQ_CONFIG_FILE="$DIR/n$n/rabbitmq.conf" \
    RABBITMQ_NODENAME="$(node_name "$n")" \
    RABBITMQ_DIST_PORT=$((port + 20000)) \
    RABBITMQ_MNESIA_BASE="$DIR/n$n/mnesia" \
    RABBITMQ_LOG_BASE="$DIR/n$n/log" \
    RABBITMQ_ENABLED_PLUGINS_FILE="$DIR/enabled_plugins" \
    RABBITMQ_PID_FILE="$DIR/n$n/pid" \
    "$@"
}

ctl() {
  local n=$1
  shift
  as_node "$n" "$CTL" -q -n "$(node_name "$n")" "$@"
}

listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
alive() { [ -f "$DIR/n$1/pid" ] && kill -0 "$(cat "$DIR/n$1/pid")" 2>/dev/null; }

url() {
  local p
  p=$(base_port)
  echo "rabbit://guest:guest@127.0.0.1:$p,guest:guest@127.0.0.1:$((p + 1)),guest:guest@127.0.0.1:$((p + 2))/"
}

# How many nodes node N sees running (0 when it does not answer).
running_nodes() {
  ctl "$1" eval 'length(rabbit_nodes:all_running()).' 2>/dev/null | tr -dc '0-9' || true
}

# Waits (60 s at most: far slower than usual on a loaded 2-core machine) until node N sees 3 running nodes.
await_cluster() {
  local n=$1
  for _ in $(seq 120); do
    [ "$(running_nodes "$n")" = 3 ] && return 0
    sleep 0.5
  done
  return 1
}

boot() {
  local n=$1
  as_node "$n" "$SERVER" -detached >>"$DIR/n$n/start.log" 2>&1
}

await_port() {
  local n=$1 port
  port=$(node_port "$n")
  for _ in $(seq 600); do
    listening "$port" && return 0
    alive "$n" || [ ! -f "$DIR/n$n/pid" ] || break
    sleep 0.1
  done
  tail -n 30 "$DIR/n$n/start.log" "$DIR/n$n/log/"*.log >&2 2>/dev/null || true
  say "node $n did not listen on 127.0.0.1:$port within 60 s (logs: $DIR/n$n/log)"
  return 1
}

stop_node() {
  local n=$1 pid
  alive "$n" || { rm -f "$DIR/n$n/pid"; return 0; }
  pid=$(cat "$DIR/n$n/pid")
  ctl "$n" stop >/dev/null 2>&1 || true
  for _ in $(seq 150); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$DIR/n$n/pid"
}

down() {
  [ -f "$DIR/port" ] || return 0
  for n in 1 2 3; do stop_node "$n" & done
  wait
}

write_configs() {
  local p n
  p=$(base_port)
  # Our own env file instead of /etc/rabbitmq/rabbitmq-env.conf: distribution on loopback only.
  cat >"$DIR/rabbitmq-env.conf" <<'EOF'
ERL_EPMD_ADDRESS=127.0.0.1
SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
EOF
  echo "[]." >"$DIR/enabled_plugins"
  for n in 1 2 3; do
    mkdir -p "$DIR/n$n/mnesia" "$DIR/n$n/log"
    {
      echo "listeners.tcp.1 = 127.0.0.1:$((p + n - 1))"
      if [ "$n" != 1 ]; then
        echo "cluster_formation.peer_discovery_backend = classic_config"
        echo "cluster_formation.classic_config.nodes.1 = $(node_name 1)"
        # Booted together with node 1: wait for it (up to 2 min) rather than start alone.
        echo "cluster_formation.discovery_retry_limit = 240"
        echo "cluster_formation.discovery_retry_interval = 500"
      fi
    } >"$DIR/n$n/rabbitmq.conf"
  done
  # A private cookie: 32 random capital letters, readable by the rabbitmq user only.
  od -An -N16 -tx1 /dev/urandom | tr -d ' \n' | tr 'a-f0-9' 'A-P' >"$DIR/.erlang.cookie"
  chown -R rabbitmq:rabbitmq "$DIR"
  chmod 400 "$DIR/.erlang.cookie"
}

# Joins node N to node 1 the classic way, when peer discovery left it alone.
join() {
  local n=$1
  say "node $n did not join through peer discovery; joining it with join_cluster"
  ctl "$n" stop_app
  ctl "$n" reset
  ctl "$n" join_cluster "$(node_name 1)"
  ctl "$n" start_app
}

# Boots node N again with empty data, once node 1 runs. Nodes that boot together sometimes lose a
# race in RabbitMQ 3.10: the joining node's Mnesia tables are made before it learns the cluster's
# feature flags, and it stops with schema_integrity_check_failed (table_attributes_mismatch).
reboot_fresh() {
  local n=$1
  say "node $n stopped during its first boot; booting it again with empty data to join node 1"
  stop_node "$n"
  rm -rf "$DIR/n$n/mnesia"
  mkdir -p "$DIR/n$n/mnesia"
  chown -R rabbitmq:rabbitmq "$DIR/n$n"
  boot "$n"
  await_port "$n"
}

up() {
  local port=${ARG:-5701}
  [ -x "$SERVER" ] || { say "rabbitmq-server is not installed"; exit 1; }
  id rabbitmq >/dev/null 2>&1 || { say "no rabbitmq user (is the rabbitmq-server package installed?)"; exit 1; }
  if [ -f "$DIR/port" ]; then
    if [ "$(base_port)" = "$port" ] && alive 1 && alive 2 && alive 3 && [ "$(running_nodes 1)" = 3 ]; then
      url
      return 0
    fi
    down
  fi
  for p in "$port" $((port + 1)) $((port + 2)); do
    if listening "$p"; then
      say "something else already listens on 127.0.0.1:$p"
      exit 1
    fi
  done
  rm -rf "$DIR/n1" "$DIR/n2" "$DIR/n3"
  echo "$port" >"$DIR/port"
  write_configs
  boot 1
  boot 2
  boot 3
  await_port 1 || { down; exit 1; }
  for n in 2 3; do await_port "$n" || reboot_fresh "$n" || { down; exit 1; }; done
  # Peer discovery joins them during their boot; join_cluster for any that booted alone.
  if ! await_cluster 1; then
    for n in 2 3; do
      [ "$(running_nodes "$n")" = 3 ] || join "$n"
    done
    await_cluster 1 || { say "the cluster did not reach 3 running nodes (logs: $DIR/n*/log)"; down; exit 1; }
  fi
  url
}

node_arg() {
  case "$ARG" in 1 | 2 | 3) ;; *) usage ;; esac
  [ -f "$DIR/port" ] || { say "no cluster in $DIR (run up first)"; exit 1; }
}

case "$ACTION" in
  up) up ;;
  down) down ;;
  url) url ;;
  ctl)
    node_arg
    shift 3
    ctl "$ARG" "$@"
    ;;
  stop)
    node_arg
    stop_node "$ARG"
    ;;
  kill)
    node_arg
    if alive "$ARG"; then kill -KILL "$(cat "$DIR/n$ARG/pid")"; fi
    rm -f "$DIR/n$ARG/pid"
    ;;
  start)
    node_arg
    if ! alive "$ARG"; then
      boot "$ARG"
      await_port "$ARG"
    fi
    await_cluster "$ARG" || { say "node $ARG did not rejoin the cluster within 60 s"; exit 1; }
    ;;
  *) usage ;;
esac
