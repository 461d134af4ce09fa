# llmfleet.vllm - developer and CI entry points.  `make help` lists the targets.
#
# Every tool runs from .venv (scripts/setup.sh builds it) with the collections in
# .collections (ANSIBLE_COLLECTIONS_PATH). HOME, ANSIBLE_HOME and the temp dirs point
# under .work/, so nothing is written to the real home directory (ansible-lint,
# ansible-test and molecule all write caches under ~ otherwise).

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help
# The targets of `test` must run in order even under `make -j`.
.NOTPARALLEL:

ROOT   := $(patsubst %/,%,$(dir $(abspath $(lastword $(MAKEFILE_LIST)))))
VENV   := $(ROOT)/.venv
BIN    := $(VENV)/bin
PY     := $(BIN)/python
COLL   := $(ROOT)/.collections
# The checkout seen as a collection: .collections/ansible_collections/llmfleet/vllm -> ../../..
COLL_DIR := $(COLL)/ansible_collections/llmfleet/vllm
WORK   := $(ROOT)/.work
SHARED ?= $(abspath $(ROOT)/../shared)

# pyenv's shims find their root through $$HOME; pin it before HOME moves under .work.
ifeq ($(origin PYENV_ROOT),undefined)
ifneq ($(wildcard $(HOME)/.pyenv),)
export PYENV_ROOT := $(HOME)/.pyenv
endif
endif

export PATH                    := $(BIN):$(PATH)
export HOME                    := $(WORK)/home
export ANSIBLE_HOME            := $(WORK)/home/.ansible
export ANSIBLE_COLLECTIONS_PATH := $(COLL)
export ANSIBLE_LOCAL_TEMP      := $(WORK)/tmp/ansible-local
# connection=local expands ~ through passwd, not $$HOME: keep its remote tmp under .work too.
export ANSIBLE_REMOTE_TMP      := $(WORK)/home/.ansible/tmp
export XDG_CACHE_HOME          := $(WORK)/cache
export PIP_DISABLE_PIP_VERSION_CHECK := 1
ifdef CI
export NO_COLOR := 1
export PY_COLORS := 0
export ANSIBLE_NOCOLOR := 1
endif

# Extra arguments, e.g. `make unit PYTEST_ARGS="-k resolver -x"`.
PYTEST_ARGS ?=
SANITY_ARGS ?=
PLAN_ARGS   ?=
PARITY_ARGS ?=
BENCH_ARGS  ?=

.PHONY: help setup lint sanity unit parity bench test pytest plan images molecule build clean distclean

help:
	@echo "make setup     create/refresh .venv and .collections (idempotent; every target runs it)"
	@echo "make lint      ansible-lint (production profile), flake8, bash -n / shellcheck on scripts"
	@echo "make sanity    ansible-test sanity --local for .venv's Python, per-test venvs (SANITY_ARGS=...)"
	@echo "make unit      pytest tests/unit (PYTEST_ARGS=...)"
	@echo "make parity    tools/golden_parity.py against $(SHARED)/golden/*.jsonl.gz"
	@echo "make bench     bench/resolve_bench.py"
	@echo "make test      setup + lint + sanity + pytest tests (CI runs this; ends with pytest's summary line)"
	@echo "make plan      ansible-playbook -i inventories/example playbooks/plan.yml (PLAN_ARGS=...)"
	@echo "make images    build the local Debian systemd test host images (tests/images/build.sh)"
	@echo "make molecule  one molecule scenario (S=gpu_facts) or all, on systemd container hosts"
	@echo "make build     ansible-galaxy collection build into .work/dist"
	@echo "make clean     remove .work, tests/output, caches; distclean also removes .venv and .collections"

setup:
	@bash $(ROOT)/scripts/setup.sh

lint: setup
	@echo "== ansible-lint"
	cd $(ROOT) && $(BIN)/ansible-lint
	@echo "== flake8"
	cd $(ROOT) && $(BIN)/flake8
	@echo "== shell scripts"
	cd $(ROOT) && for f in scripts/*.sh tests/images/*.sh .ci/run; do if [ -f "$$f" ]; then bash -n "$$f"; fi; done && echo "bash -n: ok"
	@if command -v shellcheck >/dev/null; then \
	  cd $(ROOT) && shellcheck -x scripts/*.sh tests/images/*.sh .ci/run && echo "shellcheck: ok"; \
	else echo "shellcheck: not installed, skipped (apt-get install shellcheck)"; fi

# ansible-test sanity for .venv's Python; scripts/sanity.sh explains the details
# (content root through the symlink, offline pip bootstrap) and the skipped tests.
sanity: setup
	bash $(ROOT)/scripts/sanity.sh $(SANITY_ARGS)

unit: setup
	cd $(ROOT) && $(BIN)/pytest tests/unit $(PYTEST_ARGS)

parity: setup
	@test -f $(ROOT)/tools/golden_parity.py || { echo "make parity: tools/golden_parity.py does not exist yet" >&2; exit 2; }
	@ls $(SHARED)/golden/*.jsonl.gz >/dev/null 2>&1 || { echo "make parity: no $(SHARED)/golden/*.jsonl.gz (SHARED=...)" >&2; exit 2; }
	cd $(ROOT) && $(PY) tools/golden_parity.py $(SHARED)/golden/*.jsonl.gz $(PARITY_ARGS)

bench: setup
	@test -f $(ROOT)/bench/resolve_bench.py || { echo "make bench: bench/resolve_bench.py does not exist yet" >&2; exit 2; }
	cd $(ROOT) && $(PY) bench/resolve_bench.py $(BENCH_ARGS)

# The whole pytest suite: tests/unit, tests/parity, later tests/integration (molecule).
# Last so that pytest's summary line is the last line of `make test`. Exit 5 (no tests
# collected) fails the target like any other non-zero status.
pytest: setup
	cd $(ROOT) && $(BIN)/pytest tests $(PYTEST_ARGS)

test: setup lint sanity pytest

plan: setup
	@test -f $(ROOT)/playbooks/plan.yml || { echo "make plan: playbooks/plan.yml does not exist yet (the playbooks come in a later issue)" >&2; exit 2; }
	@test -e $(ROOT)/inventories/example || { echo "make plan: inventories/example does not exist yet" >&2; exit 2; }
	cd $(ROOT) && $(BIN)/ansible-playbook -i inventories/example playbooks/plan.yml $(PLAN_ARGS)

images:
	bash $(ROOT)/tests/images/build.sh

# One molecule scenario of extensions/molecule, e.g. `make molecule S=gpu_facts` (S unset: all).
S ?=
molecule: setup images
	cd $(ROOT) && if [ -n "$(S)" ]; then $(BIN)/molecule test -s $(S); else $(BIN)/molecule test --all; fi

build: setup
	cd $(ROOT) && $(BIN)/ansible-galaxy collection build --force --output-path $(WORK)/dist

clean:
	rm -rf $(WORK) $(ROOT)/tests/output $(ROOT)/.pytest_cache
	find $(ROOT) \( -path $(VENV) -o -path $(COLL) -o -path $(ROOT)/.git \) -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +
	rm -f $(ROOT)/llmfleet-vllm-*.tar.gz

distclean: clean
	rm -rf $(VENV) $(COLL)
