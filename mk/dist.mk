# Release artifacts: `make dist` writes dist/ (tools/dist.sh: the abi3 wheel and sdist, the npm
# package and its linux-x64-gnu addon package, the C tarball, the crate), linked against glibc
# 2.17 by zig; `make dist-check` (tests/dist/check.sh) installs each where no Rust toolchain is
# reachable and runs the README's example for it. A cold `make dist` takes longer than the
# 5 minutes `make test` allows it, so CI (.ci/run) runs `make dist-check` after `make test`.
# `make version-check` (in `make test`): every copy of the workspace version agrees.
APT_PACKAGES += binutils pkg-config python3-venv

.PHONY: dist dist-check version-check

dist: deps python-prereqs node-deps ## Release artifacts in dist/: wheel + sdist, npm tarballs, C tarball, crate
	CARGO="$(CARGO)" bash tools/dist.sh

dist-check: dist testbed ## Install every dist/ artifact with no Rust toolchain reachable and run its example
	bash tests/dist/check.sh

version-check: ## Cargo.toml's version is the one in the Node package, the header and CHANGELOG.md
	python3 tools/version.py check
