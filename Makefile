# Session Viewer. `make run` serves the app on its embedded defaults; `make test` runs the suite.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
DATA := data
HOST ?= 127.0.0.1
PORT ?= 8000
WORKERS ?= 3
# Threads per worker (gunicorn's gthread workers): a worker's heartbeat goes on while its
# threads answer, so a long export that streams is never taken for a hung worker.
THREADS ?= 4
# Seconds a worker may go silent before gunicorn restarts it: with gthread, a request may
# take longer (an export of a 2 GB session takes minutes), only a stuck worker is cut off.
TIMEOUT ?= 300
PYTEST_ARGS ?=
# Processes the suite runs in (pytest-xdist): `auto` is one per core; `make test TEST_WORKERS=0`
# runs it in this one process, in order. Each worker has a test database of its own.
TEST_WORKERS ?= auto

export DJANGO_SETTINGS_MODULE := sessionviewer.settings

.PHONY: run test lint format install install-dev serve watch index migrate static compile admin bench screenshots clean cluster cluster-stop cluster-status

$(VENV)/bin/activate:
	$(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip

$(VENV)/.installed: requirements.txt | $(VENV)/bin/activate
	$(VENV)/bin/pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.installed-dev: requirements.txt requirements-dev.txt | $(VENV)/bin/activate
	$(VENV)/bin/pip install --quiet -r requirements-dev.txt
	touch $@ $(VENV)/.installed

# axe-core for the browser tests' accessibility sweep (tests/test_browser_sweep.py), pinned
# in package.json and package-lock.json, installed into node_modules/ (git-ignored).
AXE := node_modules/axe-core/axe.min.js
$(AXE): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev $(AXE)

# The secret key is generated once and kept in the local data folder, readable by its owner
# only from the moment it is created (umask), not just after the chmod.
$(DATA)/secret_key:
	mkdir -p $(DATA)
	umask 077; $(PYTHON) -c "import secrets; print(secrets.token_urlsafe(50))" > $@ || python3 -c "import secrets; print(secrets.token_urlsafe(50))" > $@
	chmod 600 $@

SECRET = SECRET_KEY_FILE=$(DATA)/secret_key

migrate: install $(DATA)/secret_key
	$(SECRET) $(PY) manage.py migrate --noinput

static: install $(DATA)/secret_key
	$(SECRET) $(PY) manage.py collectstatic --noinput --verbosity 0

# Bytecode for the project's own modules, written once: where PYTHONDONTWRITEBYTECODE is set
# (the Dockerfile, some machines) every process would compile them again at its start,
# the indexer's reading worker among them (about 50 ms of a cold index).
compile: install
	$(PY) -m compileall -q sessionviewer

# The demo data is copied once, so that what the persona editor writes stays out of git;
# `manage.py demo` indexes its memory's history (demo/fluux/history.json) as it copies it.
$(DATA)/demo: migrate
	$(SECRET) $(PY) manage.py demo

index: migrate $(DATA)/demo
	$(SECRET) $(PY) manage.py index

admin: migrate
	$(SECRET) $(PY) manage.py ensureadmin

# Serve as in production: gunicorn and whitenoise, with the watcher beside it so the index stays current.
run: migrate static compile index admin
	@echo "Serving on http://$(HOST):$(PORT)/ (Ctrl-C to stop)"
	@$(SECRET) $(PY) manage.py index --watch > $(DATA)/watcher.log 2>&1 & watcher=$$!; \
	trap 'kill $$watcher 2>/dev/null' EXIT INT TERM; \
	$(SECRET) $(VENV)/bin/gunicorn sessionviewer.wsgi --bind $(HOST):$(PORT) --workers $(WORKERS) --worker-class gthread --threads $(THREADS) --timeout $(TIMEOUT) --access-logfile -

test: install-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	DJANGO_SETTINGS_MODULE=tests.settings $(VENV)/bin/pytest -n $(TEST_WORKERS) --dist load $(PYTEST_ARGS)

lint: install-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: install-dev
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

bench: install-dev compile
	SECRET_KEY=bench-only $(PY) bench/bench_index.py

# Many machines on this one (README, "Many machines"): PostgreSQL (DATABASE_URL's, or one of its
# own in data/cluster/), 3 indexers of 3 machines, 2 web processes on 8001 and 8002.
# `make cluster CLUSTER_ARGS="--web-port 9001 --web-port 9002"`; see bench/cluster.py.
CLUSTER_ARGS ?=
cluster: install static compile
	$(PY) bench/cluster.py start $(CLUSTER_ARGS)

cluster-status: install
	$(PY) bench/cluster.py status

cluster-stop: install
	$(PY) bench/cluster.py stop

# The README's screenshots (docs/screenshots/), from a throwaway index of the demo data:
# a session's first screen wide and on a phone (light and dark), a compaction banner, a Read
# result, a word diff, an OpenClaw turn. optipng, when installed, makes them a fifth smaller.
# Not part of `make test`: CI never rewrites tracked files.
screenshots: install-dev
	$(PY) docs/screenshots.py

clean:
	rm -rf $(VENV) staticfiles .pytest_cache .ruff_cache node_modules
