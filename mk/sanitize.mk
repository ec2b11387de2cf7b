# Sanitizers on the C ABI (issue 45): librlock built on nightly twice, with AddressSanitizer and
# with ThreadSanitizer (-Zsanitizer=..., the standard library rebuilt with it: -Zbuild-std, which
# needs the rust-src component), and run by tests/c/run.sh against private servers as the
# valgrind runs are (both programs link rustc's runtime of the sanitizer; run.sh says why not
# GCC's):
# - asan: the C tests and the multi-threaded stress (tests/c/stress.c), built with
#   -fsanitize=address,undefined. Use-after-free, double free, overflows and leaks on either side
#   of the boundary stop the run with both stacks.
# - tsan: the stress, built with -fsanitize=thread. A data race on either side fails it
#   (tests/c/tsan.supp lists the one known false report, inside tokio, and why); a race planted
#   in the program must be reported first.
# Both are unoptimized builds (the dev profile: line tables, debug assertions and overflow checks
# on, in the standard library too), not release ones: with -Zbuild-std every build compiles the
# standard library and every dependency, and measured on 2 cores (2026-12-06) an unoptimized one
# took 1.9-2.2 min of CPU against 5.6 for a release one, while the runs took 72 s instead of 57.
# The sanitizers see the same accesses either way, and the assertions check more.
# CI runs it (.ci/run); the nightly toolchain and its rust-src are installed by `nightly-src`.
# llvm-symbolizer: the sanitizers name functions and lines with it (the planted-race check and
# tests/c/tsan.supp match on those names).
APT_PACKAGES += llvm
SAN_TARGET := x86_64-unknown-linux-gnu
ASAN_DIR := target/asan
TSAN_DIR := target/tsan
SAN_BUILD = CARGO_TARGET_DIR=$(1) cargo +nightly rustc --quiet -Zbuild-std --target $(SAN_TARGET) \
  -p rlock --features capi --lib --crate-type staticlib

.PHONY: sanitize-c sanitize-builds nightly-src

nightly-src:
	@rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
	@rustup component list --toolchain nightly --installed | grep -q '^rust-src' || \
	  rustup component add rust-src --toolchain nightly

sanitize-builds: nightly-src ## The AddressSanitizer and ThreadSanitizer builds of librlock.a (nightly)
	RUSTFLAGS="-Zsanitizer=address" $(call SAN_BUILD,$(ASAN_DIR))
	RUSTFLAGS="-Zsanitizer=thread" $(call SAN_BUILD,$(TSAN_DIR))

sanitize-c: deps sanitize-builds testbed ## The C tests and the C stress under AddressSanitizer, the stress under ThreadSanitizer (nightly)
	rt=$$(rustc +nightly --print sysroot)/lib/rustlib/$(SAN_TARGET)/lib/librustc-nightly_rt; \
	RLOCK_C_OUT=build/sanitize RLOCK_ASAN_LIB=$(ASAN_DIR)/$(SAN_TARGET)/debug/librlock.a RLOCK_ASAN_RT=$$rt.asan.a \
	  RLOCK_TSAN_LIB=$(TSAN_DIR)/$(SAN_TARGET)/debug/librlock.a RLOCK_TSAN_RT=$$rt.tsan.a \
	  bash tests/c/run.sh asan tsan
