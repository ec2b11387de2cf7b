# Network faults (issue 31, tests/netfaults): every surface's workers (and a Redisson worker, from
# the interop jar) reach Redis through toxiproxy or rlock-testbed's proxies; partitions, lost
# replies, silenced subscriptions, Sentinel failovers, clock jumps; a fenced store and a history
# checker. `make netfaults`, also run by `make test`. toxiproxy is built once from the Go module
# proxy into the cache outside the clone (${RLOCK_CACHE:-~/.cache/rlock}/toxiproxy-<version>/server, about 2 minutes
# cold) by the machine's Go.
TEST_TARGETS += netfaults
# libfaketime: the clock-jump scenario moves one worker's wall clock.
APT_PACKAGES += libfaketime

TOXIPROXY_VERSION := 2.12.0
TOXIPROXY_DIR := $(or $(RLOCK_CACHE),$(HOME)/.cache/rlock)/toxiproxy-$(TOXIPROXY_VERSION)
GO ?= $(or $(shell command -v go 2>/dev/null),/usr/local/go/bin/go)

.PHONY: netfaults toxiproxy

toxiproxy: ## Build toxiproxy into the cache (once per version)
	@test -x $(TOXIPROXY_DIR)/server || { \
	  test -x "$(GO)" || { echo "make toxiproxy needs Go (go1.22 or newer) on PATH"; exit 1; }; \
	  mkdir -p $(TOXIPROXY_DIR) && \
	  GOBIN=$(TOXIPROXY_DIR) $(GO) install github.com/Shopify/toxiproxy/v2/cmd/server@v$(TOXIPROXY_VERSION); }

netfaults: build-chaos testbed toxiproxy interop-jar ## Network faults (toxiproxy, testbed proxies, Sentinel failovers), every surface and Redisson; report in tests/netfaults/out/
	TOXIPROXY=$(TOXIPROXY_DIR)/server timeout 600 $(VENV)/bin/python tests/netfaults/run.py
