# The two commands: `make run` (embedded demo) and `make test` (the whole suite on
# PostgreSQL + Redis). Both create .venv and install what they need themselves.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/aihummer
TEST_REDIS_URL ?= redis://127.0.0.1:6379
# Four xdist workers on two cores: much of the suite waits (servers, workers and browsers
# starting, leases running out), and the other workers use that time. Whole test modules are
# handed out, the slowest first (the root conftest's RUN_FIRST). Each worker takes Redis
# database AIHUMMER_TEST_REDIS_DB_BASE (default 1) + its number, of Redis's 16: fewer
# workers when the base leaves fewer than four.
PYTEST_WORKERS ?= $(shell base=$${AIHUMMER_TEST_REDIS_DB_BASE:-1}; free=$$((16 - base)); echo $$((free < 4 ? free : 4)))

.PHONY: run test lint services format messages

$(VENV)/.run-deps: requirements.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $@

$(VENV)/.test-deps: requirements.txt requirements-dev.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $@ $(VENV)/.run-deps

# The desk's French: locale/*/LC_MESSAGES/django.po compiled to the .mo Django reads
# (the .mo files are committed too, so a deploy needs no gettext; this keeps them fresh).
# msgfmt itself, every time: compilemessages skips a .mo newer than its .po, which a
# merge or a checkout easily leaves stale.
messages:
	bin/ensure-gettext
	for po in locale/*/LC_MESSAGES/django.po; do msgfmt --check-format -o "$${po%.po}.mo" "$$po" || exit 1; done

run: $(VENV)/.run-deps messages
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py seed_demo
	$(BIN)/python manage.py runserver 127.0.0.1:8000

services:
	bin/ensure-gettext
	bin/ensure-browser
	bin/ensure-oidc-provider
	bin/ensure-mcp-tools
	bin/ensure-services

lint: $(VENV)/.test-deps
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python bin/import_cycles.py --all
	DATABASE_URL=sqlite:///:memory: $(BIN)/python manage.py makemigrations --check --dry-run

# Bytecode caches kept for the run, whatever the environment says (PYTHONDONTWRITEBYTECODE
# set): without them each xdist worker, and each process a test starts, compiles the project
# again and pytest rewrites every test module's asserts again (collection 17 s → 8 s of CPU).
test: $(VENV)/.test-deps services lint messages
	PYTHONDONTWRITEBYTECODE= DATABASE_URL=$(TEST_DATABASE_URL) AIHUMMER_TEST_REDIS_URL=$(TEST_REDIS_URL) CELERY_BROKER_URL= \
		$(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder

format: $(VENV)/.test-deps
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .
