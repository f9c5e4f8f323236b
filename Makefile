# Every target does its own set-up on a fresh machine: virtualenv, Python
# packages and (where needed) Debian packages. See README.md.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
CHECKER_DIR := chaos/checker
# Go's caches inside the checkout: CI may run without a HOME.
export GOCACHE := $(CURDIR)/.cache/go-build
export GOPATH := $(CURDIR)/.cache/go
export GOPROXY := off

.PHONY: all venv test pytest go-test demo bench-log sim clean

all: test

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

venv: $(STAMP)

# Go toolchain for the linearizability checker, from Debian where missing.
go-toolchain:
	@command -v go >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq golang-go >/dev/null; }

go-test: go-toolchain
	@if [ -f $(CHECKER_DIR)/go.mod ]; then cd $(CHECKER_DIR) && go vet ./... && go test ./...; fi

pytest: venv
	$(BIN)/pytest -q

test: go-test pytest

demo: venv
	$(BIN)/python -m kraftlog.demo

bench-log: venv
	$(BIN)/python bench/log_append.py

clean:
	rm -rf $(VENV) build *.egg-info
