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

# two test processes (a test file stays in one): most tests wait on subprocesses, servers and
# disks, so two overlap well even on two cores; make test WORKERS=0 runs them in one process
WORKERS ?= 2

test: install
	bash scripts/install-browser.sh || echo "make test: no Chromium; the browser tests will skip"
	$(BIN)/python -m pytest -q $(if $(filter 0,$(WORKERS)),,-n $(WORKERS) --dist loadfile)

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
