# Shared by scripts/placement.sh, keystone.sh and glance.sh: one OpenStack service from Debian's
# packages on loopback, its state in DIR, started `up` and stopped `down` by its pid file.
# Source it, then call `service_args NAME DEFAULT_PORT "$@"`; define `answers` (does the service
# at $URL answer?) and `up`, then end with `service_main`.

# Sets ACTION, DIR (absolute, created), PORT, PIDFILE and NAME from the command line.
service_args() {
  NAME=$1
  local default_port=$2
  shift 2
  [ $# -ge 2 ] || usage
  ACTION=$1
  mkdir -p "$2"
  DIR=$(cd "$2" && pwd)
  PORT=${3:-$default_port}
  PIDFILE="$DIR/$NAME.pid"
}

usage() {
  echo "usage: $0 up DIR [PORT] | down DIR" >&2
  exit 2
}
say() { echo "$NAME.sh: $*" >&2; }
alive() { [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }

# Stops the process of the pid file (its process group when it leads one): TERM, 5 s, then KILL.
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

# `up`'s first steps: print the URL and stop when DIR's service already answers; refuse when
# something else answers on the port.
already_up() {
  if alive && answers; then
    echo "$URL"
    return 0
  fi
  down
  if answers; then
    say "something else already answers on $URL"
    exit 1
  fi
  return 1
}

# WAL on an SQLite file, so that readers never wait for the writer (and a service that opens a
# second connection inside one request does not wait on itself). Debian's python3, not PATH's.
sqlite_wal() {
  /usr/bin/python3 -c 'import sqlite3, sys; sqlite3.connect(sys.argv[1]).execute("PRAGMA journal_mode=WAL")' "$1"
}

# Starts WSGI_FILE under uwsgi on 127.0.0.1:$PORT with ENV set (one `NAME=value`), one process and
# one thread (SQLite wants a single writer), "Connection: close" because uwsgi's http-socket drops
# idle keep-alive connections that clients would otherwise reuse. Then waits for it.
start_uwsgi() {
  local env=$1 wsgi=$2
  env "$env" setsid uwsgi --plugin python3 --http-socket "127.0.0.1:$PORT" \
    --wsgi-file "$wsgi" --master --processes 1 --threads 1 --enable-threads \
    --die-on-term --need-app --no-orphans --buffer-size 65535 --add-header "Connection: close" \
    --pidfile "$PIDFILE" --chdir "$DIR" --logto "$DIR/$NAME.log" \
    </dev/null >>"$DIR/$NAME.log" 2>&1 &
  wait_until_answers "$!"
}

# Waits up to 60 s for `answers`; prints the URL, or the log's tail and fails (stopping it).
wait_until_answers() {
  local child=$1
  for _ in $(seq 300); do
    if answers; then
      echo "$URL"
      return 0
    fi
    kill -0 "$child" 2>/dev/null || break
    sleep 0.2
  done
  tail -n 30 "$DIR/$NAME.log" >&2 || true
  say "$NAME did not answer on $URL (log: $DIR/$NAME.log)"
  down
  exit 1
}

service_main() {
  case "$ACTION" in
    up) up ;;
    down) down ;;
    *) usage ;;
  esac
}
