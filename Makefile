# The two commands: `make run` (install what running needs and run the site, embedded default) and
# `make test` (install the test extras too and run the whole suite). Both create .venv on first use;
# each install has its own stamp, so `make test` after `make run` adds the test extras.
# the interpreter of .venv: one built with optimizations runs the site faster (docs/deployment.md#sizing)
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: install install-test run test bench clean chromium

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# running needs the package's dependencies only
$(VENV)/.installed: pyproject.toml | $(PY)
	$(PY) -m pip install -q -e .
	touch $@

# the tests need the test extras (pytest, Playwright, ...) as well
$(VENV)/.installed-test: pyproject.toml | $(PY)
	$(PY) -m pip install -q -e ".[test]"
	touch $@

install: $(VENV)/.installed

install-test: $(VENV)/.installed-test

run: install
	$(PY) manage.py migrate --noinput
	@echo "Chat: open http://$(HOST):$(PORT)/ (on a fresh database the login page offers the first operator account)"
	$(PY) manage.py runserver $(HOST):$(PORT)

# browser chat end-to-end tests drive Debian's chromium (tests/chat/test_e2e.py)
chromium:
	@command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ] || \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }

test: install-test chromium
	$(PY) -m pytest

bench: install
	$(PY) bench/agent_overhead.py

clean:
	rm -rf $(VENV) db.sqlite3 test-db*.sqlite3* test-output
