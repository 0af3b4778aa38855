#!/usr/bin/env bash
# `make run` against a real OpenViking server when the package is installed
# (.venv-openviking, see `make test-openviking`); otherwise the ordinary `make run`
# (local provider). The server runs on a free loopback port with a stub model server and
# stops with the demo.
set -uo pipefail
cd "$(dirname "$0")/.."
HOST="${HOST:-127.0.0.1}"
PORT="${PORT:-8000}"
if [ ! -x .venv-openviking/bin/openviking-server ]; then
  echo "OpenViking is not installed (run make test-openviking once); starting the local demo."
  exec make run HOST="$HOST" PORT="$PORT"
fi
export OPENVIKING_SERVER_BIN=.venv-openviking/bin/openviking-server DEBUG=true
exec .venv/bin/python -m tests.openviking.harness run --fallback "make run HOST=$HOST PORT=$PORT" -- bash -c "
  set -e
  .venv/bin/python manage.py migrate --noinput -v0
  .venv/bin/python manage.py loopx_demo --operator operator --format text
  .venv/bin/python scripts/openviking_canary.py --goal-id demo --agent-id author
  echo
  echo '  Admin     http://$HOST:$PORT/admin/   (operator credentials above)'
  echo '  OpenViking provider: configured (OPENVIKING_BASE_URL is set for this server)'
  echo
  exec .venv/bin/python manage.py runserver $HOST:$PORT
"
