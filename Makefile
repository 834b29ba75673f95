# Quick start: `make demo` runs the main job, `make test` runs every test.
# Both create .venv and install tide with what it needs on first use.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

$(STAMP): pyproject.toml setup.py src/tide/sim/_countsim.c  # the C kernel is built by pip
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev,server,ray]'
	$(BIN)/pip install -q 'torch==2.13.0+cpu'  # tide[torch], pinned to the CPU build: never CUDA's
	touch $(STAMP)

.PHONY: install demo test lint bench
install: $(STAMP)

demo: $(STAMP)
	$(BIN)/tide sim compare --scenario demo --out out/demo

test: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup  # loadgroup: the Ray tests share one cluster

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy src

bench: $(STAMP)
	$(BIN)/python bench/bench_core.py
