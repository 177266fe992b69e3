# reliabench: two commands on a fresh clone.
#   make demo   install into .venv and run the main job
#   make test   install the test dependencies into .venv and run pytest, ruff and mypy
#   make agents install the real agent CLIs of examples/agents/ into .venv-agents/ (their
#               end-to-end tests skip without them, except in CI where they must run)
#
# The venv is made from /usr/bin/python3 when it exists: the sandbox runs hidden tests as an
# unprivileged uid, which cannot execute an interpreter under a private (0700) home directory.

PYTHON ?= $(shell [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import venv, ensurepip' 2>/dev/null && echo /usr/bin/python3 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip --disable-pip-version-check -q
# extras installed by install-test, in ONE resolve (CI adds semgrep,ray: installing them in a second
# step lets pip backtrack Semgrep to an old release that skips files under tests/)
TEST_EXTRAS ?= test

.PHONY: demo test install install-test lint typecheck bench clean sandbox-deps browser-deps agents container-deps

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -U pip

$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(PIP) install -e .
	touch $@

$(VENV)/.installed-test: $(BIN)/python pyproject.toml
	$(PIP) install -e '.[$(TEST_EXTRAS)]'
	touch $@ $(VENV)/.installed

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

# bubblewrap gives the strongest sandbox; without it reliabench falls back (and says so).
sandbox-deps:
	@if ! command -v bwrap >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing bubblewrap (the strongest sandbox backend)"; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null) \
	      || echo "could not install bubblewrap: reliabench will use a weaker sandbox and say so"; \
	  else \
	    echo "note: bubblewrap (bwrap) is not installed: reliabench will use a weaker sandbox and say so"; \
	    echo "      install it for full isolation: sudo apt-get install bubblewrap"; \
	  fi; \
	fi

# The real agent CLIs of examples/agents/ (mini-swe-agent, aider), each in .venv-agents/NAME.
agents:
	scripts/install-agent-clis.sh

# The report's browser tests need Debian's Chromium (Playwright drives /usr/bin/chromium; no browser
# is downloaded). Without it they skip locally and fail in CI (CI=1).
browser-deps:
	@if [ ! -x /usr/bin/chromium ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	      || echo "could not install chromium: the report's browser tests will skip"; \
	  else \
	    echo "note: chromium is not installed: the report's browser tests skip (sudo apt-get install chromium)"; \
	  fi; \
	fi

# The podman and docker backends: podman, runc, catatonit, docker.io, mmdebstrap and the test images
# built offline from the Debian archive (scripts/containers/setup.sh; cached: seconds when done).
# pytest runs under reliabench's own dockerd (scripts/containers/dockerd.sh run), stopped after.
# Without them (not root, no apt) their tests skip locally and fail in CI (CI=1).
container-deps:
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  scripts/containers/setup.sh || echo "could not set up podman/docker: the container backends' tests will skip"; \
	else \
	  echo "note: the podman/docker backends need root: their tests skip (as root: scripts/containers/setup.sh)"; \
	fi

demo: $(VENV)/.installed sandbox-deps
	$(BIN)/reliabench demo

test: $(VENV)/.installed-test sandbox-deps browser-deps container-deps
	scripts/containers/dockerd.sh run -- $(BIN)/python -m pytest
	$(BIN)/ruff check src tests benchmarks docs/examples
	$(BIN)/mypy

lint: $(VENV)/.installed-test
	$(BIN)/ruff check src tests benchmarks docs/examples

typecheck: $(VENV)/.installed-test
	$(BIN)/mypy

bench: $(VENV)/.installed-test
	$(BIN)/python benchmarks/bench_estimators.py

clean:
	rm -rf $(VENV) .venv-agents build dist src/*.egg-info
