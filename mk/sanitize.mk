# Sanitizers on the C ABI (issue 45): librlock built on nightly with AddressSanitizer
# (-Zsanitizer=address, the standard library rebuilt with it: -Zbuild-std, which needs the
# rust-src component), the C tests built with -fsanitize=address,undefined and linked against it,
# and run by tests/c/run.sh against private servers as the valgrind runs are. Use-after-free,
# double free, overflows and leaks on either side of the boundary stop the run with both stacks.
# Not in CI yet: it needs the nightly toolchain, which CI does not install.
ASAN_TARGET := x86_64-unknown-linux-gnu
ASAN_DIR := target/asan

.PHONY: sanitize-c nightly-src

nightly-src:
	@rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
	@rustup component list --toolchain nightly --installed | grep -q '^rust-src' || \
	  rustup component add rust-src --toolchain nightly

sanitize-c: deps nightly-src testbed ## The C tests against an AddressSanitizer build of librlock (nightly), C side also under UBSan
	RUSTFLAGS="-Zsanitizer=address" CARGO_TARGET_DIR=$(ASAN_DIR) cargo +nightly rustc --quiet -Zbuild-std \
	  --target $(ASAN_TARGET) --release -p rlock --features capi --lib --crate-type staticlib
	RLOCK_C_OUT=build/asan RLOCK_ASAN_LIB=$(ASAN_DIR)/$(ASAN_TARGET)/release/librlock.a bash tests/c/run.sh asan
