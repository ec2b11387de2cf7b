# Release artifacts: `make dist` writes dist/ (tools/dist.sh: for x86_64 and aarch64, glibc and
# musl, the abi3 wheels, x86_64 glibc's free-threaded CPython 3.14 wheel, the npm addon packages, the C tarballs, the static rlock commands; the
# sdist, the npm package and the crate), linked by zig; `make dist-check` (tests/dist/check.sh,
# tests/dist/check-arm64.sh) installs each where no Rust toolchain is reachable and runs the
# README's example for it, aarch64 under qemu-user. A cold `make dist` takes longer than the
# 5 minutes `make test` allows it, so CI (.ci/run) runs `make dist-check` after `make test`.
# `make version-check` (in `make test`): every copy of the workspace version agrees.
# musl-tools: musl-gcc and the host's musl loader (the musl librlock.so load test); qemu-user,
# binfmt and debootstrap: the aarch64 checks (tests/dist/check-arm64.sh). build-essential and
# the -dev packages: the free-threaded CPython tools/cpython-ft.sh builds (the cp314t wheel; its
# pip needs ssl, zlib and ctypes' libffi).
APT_PACKAGES += binutils pkg-config python3-venv musl-tools qemu-user-static binfmt-support debootstrap
APT_PACKAGES += build-essential libssl-dev zlib1g-dev libffi-dev liblzma-dev libbz2-dev

.PHONY: dist dist-check version-check

dist: deps python-prereqs node-deps ## Release artifacts in dist/ for x86_64/aarch64 glibc/musl: wheels, npm, C, rlock; sdist, crate
	CARGO="$(CARGO)" bash tools/dist.sh

# DIST_CHECK_PARTS: which part of the checks (tests/dist/check.sh: x86_64-gnu, rest; both when empty).
DIST_CHECK_PARTS ?=
dist-check: dist testbed ## Install every dist/ artifact with no Rust toolchain reachable and run its example
	bash tests/dist/check.sh $(DIST_CHECK_PARTS)

version-check: ## Cargo.toml's version is the one in the Node package, the header and CHANGELOG.md
	python3 tools/version.py check
