#!/usr/bin/env bash
# The OpenViking leg: a separate virtualenv with the `openviking` package (cached in
# .venv-openviking, keyed by version), a real openviking-server on loopback with a stub
# model server, and the adapter integration tests (tests/openviking).
#
# Exit status: the tests' status. If the package cannot be installed or the server cannot
# start on this machine, prints `SKIPPED: <reason>` and exits 0.
set -uo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
VERSION="${OPENVIKING_VERSION:-0.5.2}"
# The virtualenv lives in a per-user cache (so fresh clones, e.g. CI's, reuse it);
# .venv-openviking in the work tree is a symlink to it.
CACHE_ROOT="${XDG_CACHE_HOME:-$HOME/.cache}/loopx-memory"
VENV="${OPENVIKING_VENV:-$CACHE_ROOT/openviking-$VERSION}"
STAMP="$VENV/.openviking-$VERSION"
LOG="$(mktemp -t loopx-openviking-install.XXXXXX)"
trap 'rm -f "$LOG"' EXIT
started=$(date +%s)

if [ ! -f "$STAMP" ]; then
  echo "== installing openviking==$VERSION into $VENV (cached for later runs)"
  rm -rf "$VENV"
  mkdir -p "$(dirname "$VENV")"
  if ! "$PYTHON" -m venv "$VENV" >"$LOG" 2>&1; then
    echo "SKIPPED: cannot create a virtualenv for openviking: $(tail -n 1 "$LOG")"
    exit 0
  fi
  if ! "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
      --timeout 30 --retries 2 "openviking==$VERSION" >"$LOG" 2>&1; then
    echo "SKIPPED: openviking==$VERSION could not be installed: $(grep -E 'ERROR|error' "$LOG" | tail -n 1)"
    rm -rf "$VENV"
    exit 0
  fi
  touch "$STAMP"
fi
if [ "$VENV" != ".venv-openviking" ]; then
  rm -rf .venv-openviking && ln -s "$VENV" .venv-openviking
fi

echo "== OpenViking leg (openviking==$VERSION, loopback server)"
export OPENVIKING_SERVER_BIN="$PWD/.venv-openviking/bin/openviking-server"
.venv/bin/python -m tests.openviking.harness run -- \
  .venv/bin/python -m pytest tests/openviking -q ${PYTEST_ARGS:-}
status=$?
echo "OpenViking leg finished in $(( $(date +%s) - started ))s (status $status)"
exit $status
