# The README's first two commands: `make demo` and `make test`. Each one sets up what it needs.
PYTHON ?= python3
# bash with pipefail: a command piped into a filter still fails the target when it fails
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
DEMO_DATA := data/demo

.PHONY: demo test lint venv browser java bench clean

# pip prints each package as it is fetched and installed: the first run takes a few minutes
$(STAMP): pyproject.toml
	@echo "== setting up $(VENV): anon_dagster and its dependencies (dagster, pandas, pyarrow, ...)"
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install -e '.[dev]' 2>&1 | { grep --line-buffered -E '^(Collecting|Installing|Successfully|ERROR)' || true; } || \
	  { echo "installing anon_dagster failed: '$(PY) -m pip install -e .[dev]' shows why"; exit 1; }
	@# (the DuckDB IO manager's pandas handler, without its pandas<3 pin: see pyproject.toml)
	$(PY) -m pip install --quiet --no-deps 'dagster-duckdb-pandas>=0.29,<0.30'
	@echo "== $(VENV) ready"
	touch $(STAMP)

venv: $(STAMP)

# Headless Chromium for the UI test (Debian's package); the test skips with a reason when the
# machine cannot install it.
browser:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	  { if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	      (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	        || echo "chromium could not be installed: the browser test will be skipped"; \
	    else echo "chromium not installed and no root: the browser test will be skipped"; fi; }

# A Java runtime for the Spark engine's tests (Debian's headless JRE); the tests skip with a reason
# when the machine cannot install it.
java:
	@command -v java >/dev/null 2>&1 || \
	  { if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	      (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null) \
	        || echo "Java could not be installed: the Spark tests will be skipped"; \
	    else echo "Java not installed and no root: the Spark tests will be skipped"; fi; }

demo: venv
	$(PY) -m anon_dagster.demo run

test: venv browser java
	$(PY) -m pytest -q

lint: venv
	$(VENV)/bin/ruff check anon_dagster tests benchmarks examples definitions.py

bench: venv
	$(PY) benchmarks/risk.py

clean:
	rm -rf $(VENV) data published reports .dagster_home .anon_dagster
