# The README's two commands: `make run` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test soak deps lint bench clean

run: deps
	$(BIN)/assay run quick
	$(BIN)/assay report

test: deps
	$(BIN)/python -m pytest -q

# Long robustness runs (100,000 mutated outputs per parser, ...): every test marked `soak`.
soak: deps
	$(BIN)/python -m pytest -q -s -m soak

deps: $(STAMP)
	@scripts/install-system-deps

$(STAMP): pyproject.toml
	@scripts/install-system-deps
	@test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	@touch $(STAMP)

lint: deps
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

bench: deps
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache .ruff_cache
