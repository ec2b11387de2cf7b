# rlock: `make demo` and `make test` do all set-up on a fresh Debian machine.
SHELL := /bin/bash
.DEFAULT_GOAL := help
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
CARGO ?= cargo

.PHONY: help deps build build-rust demo test test-rust lint fmt clean

# Each surface adds its targets in mk/<surface>.mk and appends them to these lists.
BUILD_TARGETS :=
TEST_TARGETS :=
include $(sort $(wildcard mk/*.mk))

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

deps: ## Install what is missing: redis-server and redis-tools (apt-get)
	@if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then \
	  echo "installing redis-server and redis-tools"; \
	  $(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server redis-tools >/dev/null; \
	fi

build: deps build-rust $(BUILD_TARGETS) ## Build the core and every surface's demo worker

build-rust:
	$(CARGO) build --release -p rlock --example worker

demo: build ## Workers contend for one lock on a private redis-server; the count must be exact
	bash examples/demo.sh

test: deps test-rust $(TEST_TARGETS) lint ## Everything CI runs
	@echo "make test: all green"

test-rust: ## Rust core tests against private redis-servers
	$(CARGO) test --workspace

lint: ## clippy with warnings as errors, rustfmt check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	$(CARGO) fmt --all --check

fmt: ## Format the Rust code
	$(CARGO) fmt --all

clean: ## Remove build output
	$(CARGO) clean
	rm -rf build
