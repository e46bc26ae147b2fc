# The two commands: `make run` (install and run the site, embedded default) and `make test`
# (install test dependencies and run the whole suite). Both create .venv on first use.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: install run test bench clean chromium

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[test]"
	touch $@

install: $(VENV)/.installed

run: install
	$(PY) manage.py migrate --noinput
	@echo "Chat: open http://$(HOST):$(PORT)/ (on a fresh database the login page offers the first operator account)"
	$(PY) manage.py runserver $(HOST):$(PORT)

# browser chat end-to-end tests drive Debian's chromium (tests/chat/test_e2e.py)
chromium:
	@command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ] || \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }

test: install chromium
	$(PY) -m pytest

bench: install
	$(PY) bench/agent_overhead.py

clean:
	rm -rf $(VENV) db.sqlite3 test-db*.sqlite3* test-output
