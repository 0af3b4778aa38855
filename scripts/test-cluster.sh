#!/usr/bin/env bash
# The cluster leg (issue 25): a throwaway PostgreSQL behind PgBouncer (transaction
# pooling), Redis, two gunicorn instances behind HAProxy (round robin, health checks) and,
# when the project has its Celery app, two Celery workers + beat — all on loopback ports —
# then the scenarios of tests/cluster (one line of figures each). See docs/topology.md.
#
# Debian packages redis-server, pgbouncer and haproxy are installed with apt-get when
# missing and running as root. Every process the harness starts writes its PID under
# $SCRATCH/pids; whatever is still running at the end (exit, failure or signal) is
# stopped here by that PID.
#
# Exit status: the harness's. If a package cannot be installed: under CI=true the leg
# fails (exit 1); elsewhere it prints `SKIPPED: <reason>` and exits 0.
set -uo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(redis-server pgbouncer haproxy)
LOG="$(mktemp -t loopx-cluster-install.XXXXXX)"
SCRATCH="$(mktemp -d -t loopx-cluster.XXXXXX)"
chmod 755 "$SCRATCH"
started=$(date +%s)

# Under CI=true a missing prerequisite fails the leg; elsewhere the leg is skipped.
skip_or_fail() {
  [ "${CI:-}" = "true" ] && { echo "FAILED: $1 (CI=true: the cluster leg must run)"; exit 1; }
  echo "SKIPPED: $1"; exit 0
}

# Stop, by the PIDs the harness recorded, every process still running.
stop_recorded() {
  local file pid
  for file in "$SCRATCH"/pids/*.pid; do
    [ -f "$file" ] || continue
    pid="$(head -n 1 "$file")"
    case "$pid" in ''|*[!0-9]*) continue ;; esac
    if [ -d "/proc/$pid" ]; then
      kill "$pid" 2>/dev/null
      for _ in 1 2 3 4 5 6 7 8 9 10; do [ -d "/proc/$pid" ] || break; sleep 0.2; done
      [ -d "/proc/$pid" ] && kill -9 "$pid" 2>/dev/null
      echo "   stopped $(basename "$file" .pid) (pid $pid)"
    fi
  done
}
cleanup() {
  stop_recorded
  rm -rf "$SCRATCH" "$LOG"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

have() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] || [ -x "/usr/bin/$1" ]; }

missing=()
have redis-server || missing+=(redis-server)
have pgbouncer || missing+=(pgbouncer)
have haproxy || missing+=(haproxy)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "== installing ${missing[*]} with apt-get"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        "${missing[@]}"; } >"$LOG" 2>&1 \
      || skip_or_fail "${missing[*]} missing and could not be installed with apt-get: $(tail -n 1 "$LOG")"
  else
    skip_or_fail "${missing[*]} missing (apt-get install -y ${PACKAGES[*]} as root)"
  fi
fi
if ! ls -d /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null 2>&1; then
  skip_or_fail "no PostgreSQL server binaries (initdb/pg_ctl)"
fi
if [ "$(id -u)" = "0" ] && ! id postgres >/dev/null 2>&1; then
  skip_or_fail "running as root without a postgres user (PostgreSQL and PgBouncer refuse root)"
fi
if ! .venv/bin/python -c 'import redis' >/dev/null 2>&1; then
  skip_or_fail "the redis package is not installed in .venv (make setup)"
fi

# In the background, so a signal to this script is handled at once: it is passed on to
# the harness (which stops its processes), then the trap stops whatever is left.
LOOPX_CLUSTER_SCRATCH="$SCRATCH" .venv/bin/python -m tests.cluster ${LOOPX_CLUSTER_ARGS:-} &
harness=$!
trap 'kill -TERM "$harness" 2>/dev/null; wait "$harness"; exit 130' INT TERM
wait "$harness"
status=$?
echo "cluster leg finished in $(( $(date +%s) - started ))s (status $status)"
exit $status
