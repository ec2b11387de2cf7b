# The rlock command (cli/): `rlock run NAME -- CMD`, `rlock force-unlock NAME`.
.PHONY: build-cli install-cli

# With the chaos worker (mk/chaos.mk) and the benchmarks (mk/bench.mk) in one cargo run: cargo
# unifies the features of the packages one run builds, so the three share one release build of
# core and its dependencies; built apart, each needed its own (about 2 minutes of CI's each).
RELEASE_BINS := $(CARGO) build --release -p rlock-cli -p rlock-chaos-worker -p rlock-bench

build-cli: ## Build target/release/rlock, the command-line tool
	$(RELEASE_BINS)

BUILD_TARGETS += build-cli

# `make install` (mk/c.mk) installs the command too.
install: install-cli

install-cli: build-cli
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 target/release/rlock $(DESTDIR)$(PREFIX)/bin/
