#!/usr/bin/env bash
# Run a command against a throwaway PostgreSQL cluster.
#
# Starts a cluster from the machine's PostgreSQL binaries in a temp dir on a free
# loopback port (as the `postgres` user when run as root), exports DATABASE_URL, runs
# the command, then stops and deletes the cluster. Without the binaries it prints why
# the leg is skipped and exits 0 — except under CI=true, where both legs must run.
set -euo pipefail

find_bindir() {
  if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
    dirname "$(readlink -f "$(command -v initdb)")"; return
  fi
  local d
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    [ -x "$d/initdb" ] && { echo "$d"; return; }
  done
}

bindir=$(find_bindir || true)
if [ -z "${bindir}" ]; then
  echo "PostgreSQL leg skipped: no initdb/pg_ctl binaries on this machine" \
       "(install PostgreSQL 15 server binaries to run it)." >&2
  if [ "${CI:-}" = "true" ]; then echo "CI requires the PostgreSQL leg." >&2; exit 1; fi
  exit 0
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/loopx-pg.XXXXXX")
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
as_pg=()
if [ "$(id -u)" = "0" ]; then
  chown postgres "$tmp"
  as_pg=(runuser -u postgres --)
fi

cleanup() {
  "${as_pg[@]}" "$bindir/pg_ctl" -D "$tmp/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT

"${as_pg[@]}" "$bindir/initdb" -D "$tmp/data" -A trust -U postgres -E UTF8 --no-sync \
  >"$tmp/initdb.log" 2>&1 || { cat "$tmp/initdb.log" >&2; exit 1; }
"${as_pg[@]}" "$bindir/pg_ctl" -D "$tmp/data" -l "$tmp/server.log" -w -t 60 start \
  -o "-p $port -k $tmp -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
  >/dev/null || { cat "$tmp/server.log" >&2; exit 1; }

echo "PostgreSQL $("$bindir/postgres" --version | awk '{print $3}') on 127.0.0.1:$port" >&2
export DATABASE_URL="postgres://postgres@127.0.0.1:$port/postgres"
# For the fault tests (tests/frontdoor/test_faults.py): stop and restart this cluster.
export LOOPX_TEST_PG_CTL="$bindir/pg_ctl"
export LOOPX_TEST_PGDATA="$tmp/data"
export LOOPX_TEST_PGLOG="$tmp/server.log"
export LOOPX_TEST_PG_AS="${as_pg[*]:-}"
"$@"
