# LoopX Memory — the front door.  `make run` to try it, `make test` to check it.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
REQ_HASH  := $(shell sha256sum requirements.txt | cut -c1-16)
REQ_STAMP := $(VENV)/.requirements-$(REQ_HASH)
RUNTIME_STAMP := $(VENV)/.runtime-$(REQ_HASH)
HOST   ?= 127.0.0.1
PORT   ?= 8000
OPERATOR ?= operator

.PHONY: bench-tantivy setup setup-runtime run run-openviking reset-operator-password test test-fast test-sqlite test-postgres test-hooks-under-load check-startup test-openviking test-loopx test-mcp test-cluster lint format serve bench bench-peers soak clean

## Everything in requirements.txt (runtime, tests and tooling), installed with uv when it
## can be had (scripts/install-requirements.sh: this machine's pip registry settings are
## handed to it), else with pip.
$(REQ_STAMP): requirements.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	scripts/install-requirements.sh $(VENV) requirements.txt
	@rm -f $(VENV)/.requirements-* $(VENV)/.runtime-* && touch $@ $(RUNTIME_STAMP)

## The runtime block only (requirements.txt up to "# Tests and tooling"): what `make run`
## needs on a fresh clone. `make setup` later adds the rest.
$(RUNTIME_STAMP): requirements.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	sed '/^# Tests and tooling/,$$d' requirements.txt > $(VENV)/requirements-runtime.txt
	scripts/install-requirements.sh $(VENV) $(VENV)/requirements-runtime.txt
	@rm -f $(VENV)/.runtime-* && touch $@

setup: $(REQ_STAMP)
	@$(BIN)/python bin/loopx-memory-provider setup --quiet

setup-runtime: $(RUNTIME_STAMP)

## Port check first: a busy port fails in well under two seconds and changes nothing.
run:
	@$(PYTHON) scripts/check-port.py $(HOST) $(PORT)
	@$(MAKE) --no-print-directory setup-runtime
	DEBUG=true $(BIN)/python manage.py migrate --noinput -v0
	DEBUG=true $(BIN)/python manage.py loopx_demo --operator $(OPERATOR) --format text
	@echo ""
	@echo "  Admin     http://$(HOST):$(PORT)/admin/   (operator $(OPERATOR); password shown when created)"
	@echo "  Dashboard http://$(HOST):$(PORT)/admin/dashboard/"
	@echo "  API docs  http://$(HOST):$(PORT)/api/docs/"
	@echo "  Schema    http://$(HOST):$(PORT)/api/schema/"
	@echo "  MCP       http://$(HOST):$(PORT)/mcp/   (Bearer host token; stdio: LOOPX_MCP_TOKEN=… manage.py mcp; docs/mcp.md)"
	@echo ""
	DEBUG=true $(BIN)/python manage.py runserver $(HOST):$(PORT)

## A new password for the local operator account (printed once).
reset-operator-password: setup-runtime
	DEBUG=true $(BIN)/python manage.py migrate --noinput -v0
	DEBUG=true $(BIN)/python manage.py loopx_demo --operator $(OPERATOR) --reset-password --format text

## The whole suite on SQLite, then again on a throwaway PostgreSQL cluster, each spread
## over PYTEST_WORKERS processes (pytest-xdist; `auto` = one per core, each worker with a
## database of its own). PYTEST_WORKERS=0 runs in this one process.
## Tests marked `exclusive` (they disturb what every worker shares, e.g. stop the
## PostgreSQL cluster) run afterwards, alone, in one process.
PYTEST_WORKERS ?= auto
XDIST = $(if $(filter 0,$(PYTEST_WORKERS)),-p no:xdist,-n $(PYTEST_WORKERS) --dist loadfile)
PYTEST_LEG = $(BIN)/python -m pytest $(XDIST) -m "not exclusive" $(PYTEST_ARGS) && \
	{ $(BIN)/python -m pytest -p no:xdist -m exclusive -q $(PYTEST_ARGS); s=$$?; \
	  [ $$s -eq 5 ] || exit $$s; }
test: setup lint test-sqlite test-postgres

test-sqlite: setup
	@echo "== pytest on SQLite =="
	$(PYTEST_LEG)

test-postgres: setup
	@echo "== pytest on PostgreSQL =="
	scripts/with-postgres.sh sh -c '$(PYTEST_LEG)'

## The development loop: SQLite, in parallel, without the tests marked slow (those that
## start processes, servers or a browser).
test-fast: setup
	@echo "== pytest on SQLite, not slow =="
	$(BIN)/python -m pytest $(XDIST) -m "not slow" $(PYTEST_ARGS)

## tests/hooks/ (real forks, signals, timeouts) while two busy processes per core compete
## for the CPU: proves those tests synchronise on events, not on a wall-clock race.
test-hooks-under-load: setup
	@echo "== tests/hooks under CPU load =="
	scripts/with-cpu-load.sh $(BIN)/python -m pytest tests/hooks -q $(PYTEST_ARGS)

## Real OpenViking server leg: separate .venv-openviking (cached), loopback server, the
## adapter integration tests. Prints SKIPPED and succeeds when openviking can't install.
test-openviking: setup
	scripts/test-openviking.sh

## Real LoopX leg: loopx==2.1.1 (PyPI) + Node 22 (npm `node@22`) in a cached per-user
## virtualenv, the same scripted commands through real LoopX and through manage.py, every
## document pair compared; unlisted differences (tests/loopx_leg/differences.toml) fail.
## Prints SKIPPED and succeeds when LoopX can't install (fails under CI=true).
## The extension programs it installs run from this checkout's virtualenv, which (as root,
## under /root) the sandbox user cannot execute: children keep the leg's user here
## (docs/security.md "Sandboxed children"; tests/core/test_sandbox_user.py covers it).
test-loopx: setup
	LOOPX_SANDBOX_USER= scripts/test-loopx.sh

## Cluster leg (issue 25; docs/topology.md): PostgreSQL behind PgBouncer (transaction
## pooling), Redis, two gunicorn instances behind HAProxy, Celery workers + beat, all on
## loopback; racing writers, throttles, replay by a worker, SIGKILLed instance/worker.
## Installs redis-server/pgbouncer/haproxy with apt as root; prints SKIPPED and succeeds
## when they can't be installed (fails under CI=true).
test-cluster: setup
	scripts/test-cluster.sh

## The MCP server driven by the MCP Inspector's CLI (stdio and HTTP) and the official
## conformance suite (server mode), Node 22 from npm (docs/mcp.md).
test-mcp: setup
	scripts/test-mcp.sh

## make run with the openviking provider configured against a real loopback server
## (falls back to make run when the package is not installed).
run-openviking: setup
	HOST=$(HOST) PORT=$(PORT) scripts/run-openviking.sh

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-cache
	$(BIN)/python manage.py check
	$(BIN)/python manage.py makemigrations --check --dry-run
	@$(MAKE) --no-print-directory check-startup

## A host's per-turn CLI call starts in at most 10x a bare `import django` (CPU time, the
## median of 15 alternating pairs: holds on a loaded machine; docs/development.md
## "Start-up").
check-startup: setup
	$(BIN)/python bench/cli_startup_bench.py --check --rounds 15

format: setup
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

## Production-style server: set DATABASE_URL (PostgreSQL), SECRET_KEY, ALLOWED_HOSTS.
serve: setup-runtime
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py collectstatic --noinput -v0
	$(BIN)/gunicorn loopx_site.wsgi:application --bind $(HOST):$(PORT) \
	  --workers $${WEB_CONCURRENCY:-4} --access-logfile -

## Benchmarks: SQLite legs, then the PostgreSQL legs; every JSON line goes to
## bench/results.jsonl and bench/RESULTS.md is regenerated from it. The CLI start-up is
## compared with CLI_BASELINE_REV (main before issue 16's changes).
BENCH_OUT := bench/results.jsonl
CLI_BASELINE_REV ?= d2937f3
# Run one benchmark, show its output, append it to $(BENCH_OUT), keep its exit status.
bench_line = $(1) > $(BENCH_OUT).part; s=$$?; cat $(BENCH_OUT).part; \
	cat $(BENCH_OUT).part >> $(BENCH_OUT); rm -f $(BENCH_OUT).part; exit $$s
bench: setup
	@: > $(BENCH_OUT)
	@$(call bench_line,$(BIN)/python bench/reward_memory_bench.py)
	@$(call bench_line,$(BIN)/python bench/relevance_bench.py)
	@$(call bench_line,$(BIN)/python bench/cli_startup_bench.py --compare-rev $(CLI_BASELINE_REV))
	@$(call bench_line,$(BIN)/python bench/hooks_bench.py)
	@$(call bench_line,$(BIN)/python bench/preferences_bench.py)
	@$(call bench_line,$(BIN)/python bench/api_load_bench.py --phases single)
	@$(call bench_line,$(BIN)/python bench/mcp_bench.py)
	@$(call bench_line,scripts/with-postgres.sh $(BIN)/python bench/reward_memory_bench.py)
	@$(call bench_line,scripts/with-postgres.sh $(BIN)/python bench/preferences_bench.py)
	@$(call bench_line,scripts/with-postgres.sh $(BIN)/python bench/api_load_bench.py)
	$(BIN)/python bench/render_results.py $(BENCH_OUT) bench/RESULTS.md

## LangGraph SqliteStore side by side, in its own virtualenv (never a runtime dependency).
PEERS := .venv-peers
PEER_PACKAGES := langgraph-checkpoint-sqlite==3.1.2
$(PEERS)/.stamp: requirements.txt
	@test -x $(PEERS)/bin/python || $(PYTHON) -m venv $(PEERS)
	$(PEERS)/bin/python -m pip install --quiet --disable-pip-version-check -r requirements.txt $(PEER_PACKAGES)
	@touch $@

bench-peers: $(PEERS)/.stamp
	@$(call bench_line,$(PEERS)/bin/python bench/peer_bench.py)
	$(BIN)/python bench/render_results.py $(BENCH_OUT) bench/RESULTS.md

## Our lexical ranking beside Tantivy (bench/tantivy_bench.py): Tantivy is a bench-only
## dependency (bench/requirements.txt), installed here into the project's venv. SQLite at
## 10k / 100k / 1M, then PostgreSQL at 10k / 100k.
bench-tantivy: setup
	scripts/install-requirements.sh $(VENV) bench/requirements.txt
	@$(call bench_line,$(BIN)/python bench/tantivy_bench.py)
	@$(call bench_line,scripts/with-postgres.sh $(BIN)/python bench/tantivy_bench.py --sizes 10000,100000)

## Reliability soak (>= 10,000 mixed operations) on SQLite, then on PostgreSQL.
soak: setup
	$(BIN)/python bench/preferences_soak.py
	scripts/with-postgres.sh $(BIN)/python bench/preferences_soak.py

clean:
	rm -rf $(VENV) $(PEERS) .venv-openviking db.sqlite3 db.sqlite3-* staticfiles
