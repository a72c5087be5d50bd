# The two commands of the quick start: `make run` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test setup lint format bench clean

$(BIN)/tapeview: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,postgres]'
	touch $@

setup: $(BIN)/tapeview

## run: set up, write the demo data, index it and serve http://127.0.0.1:8000
run: setup
	$(BIN)/tapeview demo
	$(BIN)/tapeview serve --host $(HOST) --port $(PORT)

## test: set up and run every test (browser tests need Chromium: see .ci/run)
test: setup
	$(BIN)/ruff check .
	$(BIN)/python -m pytest

lint: setup
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

format: setup
	$(BIN)/ruff format . && $(BIN)/ruff check --fix .

## bench: index a generated 200k-entry tape and compare with plain orjson parsing
bench: setup
	$(BIN)/python bench/index_rate.py

clean:
	rm -rf $(VENV) var test-artifacts bench/out
