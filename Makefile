# The two commands: `make run` (install and run the site, embedded default) and `make test`
# (install test dependencies and run the whole suite). Both create .venv on first use.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: install run test bench clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[test]"
	touch $@

install: $(VENV)/.installed

run: install
	$(PY) manage.py migrate --noinput
	$(PY) manage.py runserver $(HOST):$(PORT)

test: install
	$(PY) -m pytest

bench: install
	$(PY) bench/agent_overhead.py

clean:
	rm -rf $(VENV) db.sqlite3 test-db*.sqlite3*
