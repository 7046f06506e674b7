#!/usr/bin/env bash
# Runs a private 3-node MariaDB Galera cluster on loopback, separate from the machine's MariaDB on
# 3306 (never touched: no file under /etc/mysql is read), for the tests in test/cluster/. Everything
# a node writes (data, socket, pid, error log, config) stays in DIR/nodeN.
#
#   scripts/galera.sh up DIR        starts nodes 1-3 (node 1 bootstraps the cluster), waits until
#                                   wsrep_cluster_size = 3 and every node is Synced; prints 3 URLs
#   scripts/galera.sh down DIR      stops every node (safe to call twice, or for a DIR never started)
#   scripts/galera.sh kill DIR N    kill -9 of node N (fault tests)
#   scripts/galera.sh start DIR N   brings node N back; it rejoins through IST (or SST) and is Synced
#   scripts/galera.sh url N         prints node N's URL
#
# Node N listens on 127.0.0.1: SQL 3400+N, Galera replication 4400+N, IST 4410+N, rsync SST 4420+N.
# GALERA_BASE_PORT=B (default 3400) moves them all: SQL B+N, replication B+1000+N, IST B+1010+N,
# SST B+1020+N, so that a second cluster runs beside the first (e.g. B=3430). Give every call for
# one DIR the same B. URLs: mysql://root@127.0.0.1:340N/mysql (root without password, as mariadb-install-db
# --auth-root-authentication-method=normal creates it). Only node 1 is initialised; nodes 2 and 3
# start empty and receive a full copy (SST, rsync) when they join.
# Needs root and Debian's mariadb-server + galera-4 + rsync. mariadbd runs as the mysql user, who
# must own DIR/nodeN and be able to reach DIR (the script chowns DIR and opens it to others: a
# mktemp directory is 0700). The settings are what docs/deploy.md (Galera) asks of a cluster.
set -euo pipefail

usage() {
  echo "usage: $0 up DIR | down DIR | kill DIR N | start DIR N | url N" >&2
  exit 2
}
say() { echo "galera.sh: $*" >&2; }

PROVIDER=/usr/lib/galera/libgalera_smm.so
NODES="1 2 3"
BASE=${GALERA_BASE_PORT:-3400}
case "$BASE" in '' | *[!0-9]*) echo "galera.sh: GALERA_BASE_PORT must be a number" >&2; exit 2 ;; esac
sql_port() { echo $((BASE + $1)); }
repl_port() { echo $((BASE + 1000 + $1)); }
url() { echo "mysql://root@127.0.0.1:$(sql_port "$1")/mysql"; }

[ $# -ge 2 ] || usage
ACTION=$1
if [ "$ACTION" = url ]; then
  url "$2"
  exit 0
fi
mkdir -p "$2"
DIR=$(cd "$2" && pwd)
N=${3:-}

node_dir() { echo "$DIR/node$1"; }
pid_of() { cat "$(node_dir "$1")/mariadbd.pid" 2>/dev/null || true; }
alive() {
  local pid
  pid=$(pid_of "$1")
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
client() { mariadb --no-defaults -S "$(node_dir "$1")/mariadbd.sock" -uroot -N -B -e "$2" 2>/dev/null; }
status_of() { client "$1" "SHOW GLOBAL STATUS LIKE '$2'" | cut -f2; }

write_config() {
  local n=$1 d
  d=$(node_dir "$n")
  cat >"$d/my.cnf" <<EOF
[mariadbd]
user = mysql
datadir = $d/data
socket = $d/mariadbd.sock
pid-file = $d/mariadbd.pid
log-error = $d/error.log
bind-address = 127.0.0.1
port = $(sql_port "$n")
skip-log-bin
performance_schema = OFF
# What the project needs from Galera (docs/deploy.md).
binlog_format = ROW
default_storage_engine = InnoDB
innodb_autoinc_lock_mode = 2
# Small: three nodes share a 2-core machine with other tests.
innodb_buffer_pool_size = 64M
innodb_log_file_size = 16M
innodb_flush_log_at_trx_commit = 2
max_connections = 200
wsrep_on = ON
wsrep_provider = $PROVIDER
wsrep_cluster_name = cyborg-test
wsrep_cluster_address = gcomm://127.0.0.1:$(repl_port 1),127.0.0.1:$(repl_port 2),127.0.0.1:$(repl_port 3)
wsrep_node_name = node$n
wsrep_node_address = 127.0.0.1:$(repl_port "$n")
wsrep_node_incoming_address = 127.0.0.1:$(sql_port "$n")
wsrep_sst_method = rsync
wsrep_sst_receive_address = 127.0.0.1:$((BASE + 1020 + n))
wsrep_provider_options = "gmcast.listen_addr=tcp://127.0.0.1:$(repl_port "$n");ist.recv_addr=127.0.0.1:$((BASE + 1010 + n));gcache.size=32M"
wsrep_slave_threads = 2
# Each certification failure names its table and key in error.log (what two writers raced for).
wsrep_log_conflicts = ON
EOF
}

# Starts node N in the background; BOOTSTRAP=1 makes it a new cluster of its own.
launch() {
  local n=$1 bootstrap=${2:-0} d
  d=$(node_dir "$n")
  if listening "$(sql_port "$n")"; then
    say "something else already listens on 127.0.0.1:$(sql_port "$n")"
    exit 1
  fi
  mkdir -p "$d/data"
  write_config "$n"
  local extra=() pos
  # A node that died (kill -9) left seqno -1: recover its last committed position first, as
  # Debian's galera_recovery does for systemd, so that it rejoins by IST from a peer's gcache.
  # Without it the node asks for a full SST, and an rsync SST blocks its donor's writes for the
  # whole copy (53 s once on a loaded machine).
  if [ "$bootstrap" = 0 ] && grep -q '^seqno: *-1' "$d/data/grastate.dat" 2>/dev/null; then
    chown -R mysql:mysql "$d"
    mariadbd --defaults-file="$d/my.cnf" --wsrep-recover --log-error="$d/recover.log" \
      </dev/null >/dev/null 2>&1 || true
    pos=$(sed -n 's/.*WSREP: Recovered position: *\([0-9a-f-]*:-\{0,1\}[0-9]*\).*/\1/p' "$d/recover.log" | tail -n 1)
    if [ -n "$pos" ]; then
      extra=(--wsrep-start-position="$pos")
    else
      say "node $n: no position recovered (log: $d/recover.log); it will ask for a full SST"
    fi
  fi
  if [ "$bootstrap" = 1 ]; then
    extra=(--wsrep-new-cluster)
    # A cluster stopped whole may be restarted from node 1 only if Galera agrees it holds the latest
    # state; in a test DIR it does (or nothing else survives), so say so.
    [ -f "$d/data/grastate.dat" ] && sed -i 's/^safe_to_bootstrap: 0/safe_to_bootstrap: 1/' "$d/data/grastate.dat"
  fi
  chown -R mysql:mysql "$d"
  setsid mariadbd --defaults-file="$d/my.cnf" "${extra[@]}" </dev/null >>"$d/stdout.log" 2>&1 &
}

# Waits until node N answers, is Synced, and (with SIZE) sees SIZE members.
wait_synced() {
  local n=$1 size=${2:-} d
  d=$(node_dir "$n")
  # 180 s: an SST copies the whole data directory on a loaded 2-core machine.
  for _ in $(seq 1800); do
    if [ "$(status_of "$n" wsrep_local_state_comment)" = Synced ] &&
      { [ -z "$size" ] || [ "$(status_of "$n" wsrep_cluster_size)" = "$size" ]; }; then
      return 0
    fi
    if ! pgrep -f -- "--defaults-file=$d/my.cnf" >/dev/null && ! alive "$n"; then
      tail -n 40 "$d/error.log" >&2 2>/dev/null || true
      say "node $n exited while starting (log: $d/error.log)"
      return 1
    fi
    sleep 0.1
  done
  tail -n 40 "$d/error.log" >&2 2>/dev/null || true
  say "node $n was not Synced within 180 s (log: $d/error.log)"
  return 1
}

stop_node() {
  local n=$1 pid
  pid=$(pid_of "$n")
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 300); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$(node_dir "$n")/mariadbd.pid"
}

prepare() {
  command -v mariadbd >/dev/null && [ -f "$PROVIDER" ] || {
    say "needs mariadb-server and galera-4 (mariadbd, $PROVIDER)"
    exit 1
  }
  command -v rsync >/dev/null || { say "needs rsync (SST)"; exit 1; }
  chmod 755 "$DIR"
  chown mysql:mysql "$DIR"
  if ! runuser -u mysql -- test -w "$DIR"; then
    say "the mysql user cannot reach $DIR: every directory above it needs o+x"
    exit 1
  fi
  local d1
  d1=$(node_dir 1)
  if [ ! -d "$d1/data/mysql" ]; then
    mkdir -p "$d1/data"
    chown -R mysql:mysql "$d1"
    mariadb-install-db --no-defaults --user=mysql --datadir="$d1/data" \
      --auth-root-authentication-method=normal --skip-test-db >"$d1/install.log" 2>&1 || {
      tail -n 30 "$d1/install.log" >&2
      say "mariadb-install-db failed (log: $d1/install.log)"
      exit 1
    }
  fi
}

up() {
  local all=1
  for n in $NODES; do alive "$n" || all=0; done
  if [ "$all" = 0 ]; then
    prepare
    alive 1 || { launch 1 1 && wait_synced 1; } || { down; exit 1; }
    # Two joiners at once: each takes its own SST from whichever node donates.
    for n in 2 3; do alive "$n" || launch "$n"; done
  fi
  for n in $NODES; do wait_synced "$n" 3 || { down; exit 1; }; done
  for n in $NODES; do url "$n"; done
}

down() {
  # Last node stopped = the one Galera marks safe to bootstrap from: stop node 1 last.
  for n in 3 2 1; do stop_node "$n"; done
}

node_arg() {
  case "$N" in
    1 | 2 | 3) ;;
    *) usage ;;
  esac
}

case "$ACTION" in
  up) up ;;
  down) down ;;
  kill)
    node_arg
    pid=$(pid_of "$N")
    [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null || true
    for _ in $(seq 100); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    rm -f "$(node_dir "$N")/mariadbd.pid"
    ;;
  start)
    node_arg
    if ! alive "$N"; then
      others=0
      for n in $NODES; do [ "$n" != "$N" ] && alive "$n" && others=1; done
      # With no other node up there is nobody to join: this one starts the cluster again.
      launch "$N" $((1 - others))
    fi
    wait_synced "$N"
    url "$N"
    ;;
  *) usage ;;
esac
