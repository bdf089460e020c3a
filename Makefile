# The project's commands. `make web` and `make test` are the README's two commands.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install hello web test lint fmt bench

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check -U pip
	$(BIN)/python -m pip install -q --disable-pip-version-check -e '.[all,dev]'
	touch $(STAMP)

install: $(STAMP)

hello: install
	$(BIN)/python examples/01_hello.py

# the chat page on http://$(HOST):$(PORT)/ (the offline demo agent unless LOVIA_MODEL is set);
# make web PORT=8001 HOST=0.0.0.0 to choose where it listens
PORT ?= 8000
HOST ?= 127.0.0.1

web: install
	$(BIN)/lovia web $(if $(LOVIA_MODEL),,--demo) --port $(PORT) --host $(HOST)

# two test processes (a test file stays in one, so its module fixtures run once: a long set of
# checks is split over files, as tests/compat/test_programs_*.py): most tests wait on
# subprocesses, servers and disks, so two overlap well even on two cores; make test WORKERS=0
# runs them in one process. LOVIA_CHAOS_FULL=1 make test runs tests/chaos's full crash matrix
WORKERS ?= 2

# PostgreSQL for its tests: LOVIA_TEST_POSTGRES_DSN when set; else this DSN when a quick probe
# connects (CI=true uses it unprobed: there an unreachable server fails those tests, never skips)
TEST_POSTGRES_DSN ?= postgresql://postgres@127.0.0.1:5432/test

# What CI runs (.ci/run is `make test` then `make lint`): Chromium for the browser tests, the
# lovia 0.9.119 reference venv for tests/compat and its examples for tests/examples, PostgreSQL
# when reachable; the run ends with a count of the skipped tests by reason.
test: install
	bash scripts/install-browser.sh || echo "make test: no Chromium; the browser tests will skip"
	bash scripts/reference-venv.sh || echo "make test: no lovia 0.9.119 reference venv; tests/compat will not compare against it live"
	$(BIN)/python scripts/run_examples.py --download --fetch-only || echo "make test: no lovia 0.9.119 examples; tests/examples will skip"
	@dsn="$$($(BIN)/python scripts/postgres-dsn.py '$(TEST_POSTGRES_DSN)')"; \
	LOVIA_TEST_POSTGRES_DSN="$$dsn" $(BIN)/python -m pytest -q \
		$(if $(filter 0,$(WORKERS)),,-n $(WORKERS) --dist loadfile) $(PYTEST_ARGS)

lint: install
	$(BIN)/ruff check src tests examples benchmarks
	$(BIN)/ruff format --check src tests examples benchmarks
	$(BIN)/mypy --strict src
	$(BIN)/lint-imports

fmt: install
	$(BIN)/ruff format src tests examples benchmarks
	$(BIN)/ruff check --fix src tests examples benchmarks

bench: install
	$(BIN)/python benchmarks/overhead.py
