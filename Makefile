# LoopX Memory — the front door.  `make run` to try it, `make test` to check it.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
REQ_STAMP := $(VENV)/.requirements-$(shell sha256sum requirements.txt | cut -c1-16)
HOST   ?= 127.0.0.1
PORT   ?= 8000
OPERATOR ?= operator

.PHONY: setup run run-openviking reset-operator-password test test-sqlite test-postgres test-openviking lint format serve bench soak clean

$(REQ_STAMP): requirements.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	@rm -f $(VENV)/.requirements-* && touch $@

setup: $(REQ_STAMP)

## Port check first: a busy port fails in well under two seconds and changes nothing.
run:
	@$(PYTHON) scripts/check-port.py $(HOST) $(PORT)
	@$(MAKE) --no-print-directory setup
	DEBUG=true $(BIN)/python manage.py migrate --noinput -v0
	DEBUG=true $(BIN)/python manage.py loopx_demo --operator $(OPERATOR) --format text
	@echo ""
	@echo "  Admin     http://$(HOST):$(PORT)/admin/   (operator $(OPERATOR); password shown when created)"
	@echo "  Dashboard http://$(HOST):$(PORT)/admin/dashboard/"
	@echo "  API docs  http://$(HOST):$(PORT)/api/docs/"
	@echo "  Schema    http://$(HOST):$(PORT)/api/schema/"
	@echo ""
	DEBUG=true $(BIN)/python manage.py runserver $(HOST):$(PORT)

## A new password for the local operator account (printed once).
reset-operator-password: setup
	DEBUG=true $(BIN)/python manage.py migrate --noinput -v0
	DEBUG=true $(BIN)/python manage.py loopx_demo --operator $(OPERATOR) --reset-password --format text

## The whole suite on SQLite, then again on a throwaway PostgreSQL cluster.
test: setup lint test-sqlite test-postgres

test-sqlite: setup
	@echo "== pytest on SQLite =="
	$(BIN)/python -m pytest $(PYTEST_ARGS)

test-postgres: setup
	@echo "== pytest on PostgreSQL =="
	scripts/with-postgres.sh $(BIN)/python -m pytest $(PYTEST_ARGS)

## Real OpenViking server leg: separate .venv-openviking (cached), loopback server, the
## adapter integration tests. Prints SKIPPED and succeeds when openviking can't install.
test-openviking: setup
	scripts/test-openviking.sh

## make run with the openviking provider configured against a real loopback server
## (falls back to make run when the package is not installed).
run-openviking: setup
	HOST=$(HOST) PORT=$(PORT) scripts/run-openviking.sh

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python manage.py check
	$(BIN)/python manage.py makemigrations --check --dry-run

format: setup
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

## Production-style server: set DATABASE_URL (PostgreSQL), SECRET_KEY, ALLOWED_HOSTS.
serve: setup
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py collectstatic --noinput -v0
	$(BIN)/gunicorn loopx_site.wsgi:application --bind $(HOST):$(PORT) \
	  --workers $${WEB_CONCURRENCY:-4} --access-logfile -

bench: setup
	@for b in bench/*_bench.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

## Reliability soak (>= 10,000 mixed operations) on SQLite, then on PostgreSQL.
soak: setup
	$(BIN)/python bench/preferences_soak.py
	scripts/with-postgres.sh $(BIN)/python bench/preferences_soak.py

clean:
	rm -rf $(VENV) .venv-openviking db.sqlite3 db.sqlite3-* staticfiles
