# The two commands of the quick start: `make run` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000
# Where `make setup` links the `tapeview` command (Debian's ~/.profile puts it on PATH when it exists).
BINDIR ?= $(HOME)/.local/bin
# Test processes of one pass (pytest-xdist): one per core of the 2-core machines CI runs on.
WORKERS ?= 2
PYTEST = $(BIN)/python -m pytest -n $(WORKERS)
PG_PASS = $(BIN)/python .ci/postgres_server.py -- $(PYTEST) -m "not browser" -p no:cacheprovider

.PHONY: run test test-sqlite test-postgres sanitize setup link system screenshots lint format bench load clean

$(BIN)/tapeview: pyproject.toml tapeview/tapes/_lane.c tapeview/tapes/lane_next.h tapeview/search/_text.c tapeview/sources/bub_dates.h
	PY=$(PY) .ci/system-packages build
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,postgres]'
	touch $@

## setup: install into .venv and link `tapeview` into ~/.local/bin (BINDIR)
setup: $(BIN)/tapeview link

## link: $(BINDIR)/tapeview -> .venv/bin/tapeview; never over a program that is not such a link
link:
	@target="$(CURDIR)/$(BIN)/tapeview"; link="$(BINDIR)/tapeview"; \
	if [ -e "$$link" ] && [ ! -L "$$link" ]; then \
		echo "tapeview: $$link is another program, left alone: run $$target"; exit 0; \
	elif ! mkdir -p "$(BINDIR)" 2>/dev/null || ! ln -sfn "$$target" "$$link" 2>/dev/null; then \
		echo "tapeview: cannot write $(BINDIR): run $$target"; exit 0; \
	fi; \
	echo "tapeview: linked $$link -> $$target"; \
	case ":$$PATH:" in *":$(BINDIR):"*) ;; *) \
		echo "tapeview: $(BINDIR) is not on PATH in this shell: run 'export PATH=\"$(BINDIR):\$$PATH\"'" \
			"(Debian's ~/.profile adds it at your next login), or use $$target";; \
	esac

## run: set up, write the demo data, index it and serve http://127.0.0.1:8000
run: setup
	$(BIN)/tapeview demo
	$(BIN)/tapeview serve --host $(HOST) --port $(PORT)

## system: the Debian packages the tests need (Chromium, a CJK font, PostgreSQL), installed if missing
system:
	.ci/system-packages

## test: set up and run every test: on SQLite (with the browser tests), then again on a real PostgreSQL,
## then the C lanes' own tests under the sanitizers; each pass in WORKERS processes
test: test-sqlite test-postgres sanitize

test-sqlite: setup system
	$(BIN)/ruff check .
	$(PYTEST)

## test-postgres: every test but the browser ones, against a throwaway PostgreSQL server (.ci/postgres_server.py)
test-postgres: setup system
	$(PG_PASS)

## sanitize: the C lanes built with AddressSanitizer and UBSan, run by their differential and fuzz tests
sanitize: setup
	PY=$(BIN)/python .ci/sanitize

## screenshots: retake the README's screenshots (docs/screenshots) with the browser test that checks them
screenshots: setup system
	TAPEVIEW_SCREENSHOTS=docs/screenshots $(BIN)/python -m pytest -q tests/project/test_screenshots.py

lint: setup
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

format: setup
	$(BIN)/ruff format . && $(BIN)/ruff check --fix .

## bench: the scale table (docs/performance.md) on SQLite and PostgreSQL; SCALE=1 is the full size
SCALE ?= 0.01
bench: setup system
	$(BIN)/python bench/scale.py --scale $(SCALE) --db both

## load: 30 signed-in users for 60 s against `tapeview serve` beside a live agent; fails on any 5xx
load: setup
	$(BIN)/python bench/load/run.py --users 30 --seconds 60

clean:
	rm -rf $(VENV) var test-artifacts bench/out
