#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the annotation store tests (Debian's `postgresql` package).
#   .ci/postgres.sh start DIR   initdb into DIR, start the server on a free localhost port, create
#                               the database segviz_test and print its SQLAlchemy URL
#   .ci/postgres.sh stop DIR    stop that server and delete DIR
# Run as root, the server runs as the `postgres` user (PostgreSQL refuses to run as root).
set -euo pipefail

bindir() {
  local dirs=(/usr/lib/postgresql/*/bin)
  [ -x "${dirs[-1]}/initdb" ] || { echo "no PostgreSQL server found under /usr/lib/postgresql" >&2; return 1; }
  printf '%s\n' "${dirs[@]}" | sort -V | tail -n 1
}

as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start() {
  local dir=$1 bin port
  bin=$(bindir)
  port=$(free_port)
  mkdir -p "$dir"
  if [ "$(id -u)" = 0 ]; then chown postgres: "$dir"; fi
  as_owner "$bin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --no-sync >"$dir/initdb.log" 2>&1 \
    || { cat "$dir/initdb.log" >&2; return 1; }
  as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start \
    -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" >/dev/null \
    || { cat "$dir/server.log" >&2; return 1; }
  as_owner "$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres segviz_test
  echo "postgresql+psycopg://postgres@127.0.0.1:$port/segviz_test"
}

stop() {
  local dir=$1
  if [ -d "$dir/data" ]; then as_owner "$(bindir)/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null || true; fi
  rm -rf "$dir"
}

case "${1:-}" in
  start) start "${2:?usage: $0 start DIR}" ;;
  stop) stop "${2:?usage: $0 stop DIR}" ;;
  *) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
