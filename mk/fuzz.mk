# Fuzzing (issue 45): the cargo-fuzz targets of fuzz/ (each one call into rlock::fuzz, or for the
# command's arguments rlock_cli::fuzz, whose doc comments state the rules each checks), run on
# the nightly toolchain for FUZZ_SECONDS each. A run adds what it finds to fuzz/corpus/<target>
# (commit what is worth keeping; a crash is written to fuzz/artifacts/<target>, fixed, and kept
# in the corpus as a test), and `cargo test`
# replays the whole corpus on stable (core/tests/fuzz_corpus.rs), so `make check` and `make
# test` run every kept input (cli/tests/fuzz_corpus.rs for the cli_* targets). Not in CI: a
# fuzzing run proves nothing in a set time.
CARGO_FUZZ_VERSION := 0.13.2
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := $(basename $(notdir $(wildcard fuzz/fuzz_targets/*.rs)))

.PHONY: fuzz fuzz-replay cargo-fuzz

cargo-fuzz:
	@rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
	@if [ "$$(cargo fuzz --version 2>/dev/null)" != "cargo-fuzz $(CARGO_FUZZ_VERSION)" ]; then \
	  echo "installing cargo-fuzz $(CARGO_FUZZ_VERSION)"; \
	  $(CARGO) install --locked --quiet cargo-fuzz --version $(CARGO_FUZZ_VERSION); \
	fi

fuzz: cargo-fuzz ## Each fuzz target for FUZZ_SECONDS (default 60) on nightly, with AddressSanitizer; finds go to fuzz/corpus, crashes to fuzz/artifacts
	cd fuzz && for t in $(FUZZ_TARGETS); do \
	  echo "== fuzz $$t ($(FUZZ_SECONDS) s)"; \
	  cargo +nightly fuzz run $$t corpus/$$t -- -max_total_time=$(FUZZ_SECONDS) -timeout=10 || exit 1; \
	done

fuzz-replay: ## Every kept fuzz input through its target, on stable (also in make check and cargo test)
	$(CARGO) test $(CORE_PKG) --test fuzz_corpus --quiet
	$(CARGO) test -p rlock-cli --test fuzz_corpus --quiet
