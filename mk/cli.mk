# The rlock command (cli/): `rlock run NAME -- CMD`, `rlock force-unlock NAME`.
.PHONY: build-cli install-cli

build-cli: ## Build target/release/rlock, the command-line tool
	$(CARGO) build --release -p rlock-cli

BUILD_TARGETS += build-cli

# `make install` (mk/c.mk) installs the command too.
install: install-cli

install-cli: build-cli
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 target/release/rlock $(DESTDIR)$(PREFIX)/bin/
