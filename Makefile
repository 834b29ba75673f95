# Quick start: `make demo` runs the main job, `make test` runs every test.
# Both create .venv on first use; `make demo` installs only what the twin needs,
# `make test` adds the server, the Ray executor, the test tools and torch.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip --disable-pip-version-check
DEMO_STAMP := $(VENV)/.installed-demo
STAMP := $(VENV)/.installed  # everything: `make test` and development

$(BIN)/python:
	$(PY) -m venv $(VENV)

# tide and the twin's dependencies (numpy, pydantic, PyYAML, Typer, Rich); pip builds the C kernel
$(DEMO_STAMP): pyproject.toml setup.py src/tide/sim/_countsim.c src/tide/sched/_plan.c | $(BIN)/python
	@echo "[install 1/1] tide and the twin's dependencies into $(VENV)"
	$(PIP) install -e .
	touch $@

$(STAMP): $(DEMO_STAMP) tools/install_torch.py
	@echo "[install 1/2] tide's extras for the tests: server, Ray executor, dev tools"
	$(PIP) install -e '.[dev,server,ray]'
	@echo "[install 2/2] torch for examples/train_ddp.py"
	$(BIN)/python tools/install_torch.py
	touch $@

.PHONY: install demo test lint bench
install: $(STAMP)

demo: $(DEMO_STAMP)
	$(BIN)/tide sim compare --scenario demo --out out/demo

test: $(STAMP)
	$(BIN)/ruff check src tests bench tools
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup  # loadgroup: the Ray tests share one cluster

lint: $(STAMP)
	$(BIN)/ruff check src tests bench tools
	$(BIN)/mypy src

bench: $(STAMP)
	$(BIN)/python bench/bench_core.py
