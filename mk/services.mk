# Managed endpoints (issue 41; docs/operations/managed-services.md): every surface's conformance
# subset, the short chaos cases and the interop lock scenarios, against rlock-testbed's
# stand-ins of what managed services put in front of Redis:
#   proxy-endpoint  one cluster-enabled server owning every slot, CLUSTER renamed away, reached
#                   as redis:// (CROSSSLOT on anything spanning slots);
#   twemproxy       nutcracker sharding by {hash tag} over two servers (no pub/sub, no HELLO);
#   restricted      WAIT, WAITAOF, CONFIG and CLIENT renamed away;
#   evicting        maxmemory 4mb, maxmemory-policy volatile-lru.
# Rust (core/tests/managed.rs) and Node (test/managed.test.js) run here and in their suites;
# Python's test_managed.py runs here only. Chaos and interop need Redisson's and redis-py's
# views of the data, so they run on the three one-server stand-ins (twemproxy refuses the
# blocking and multi-key commands their drivers use); the C subset runs on all four. The
# restricted stand-in skips the chaos case that watches expirations (CONFIG SET
# notify-keyspace-events).
TEST_TARGETS += services

.PHONY: services

SERVICES_STANDINS := proxy-endpoint twemproxy restricted evicting
SERVICES_CHAOS := mutex mutex-family fair-cancel

services: build-chaos build-interop testbed ## Every surface's subset, short chaos cases and interop on the managed-endpoint stand-ins
	$(CARGO) test $(CORE_PKG) --test managed
	cd bindings-python && ../$(VENV)/bin/python -m pytest -q tests/test_managed.py
	node=$$(tools/runtime.sh node26) && cd $(NODE_DIR) && $$node --test --test-timeout=120000 test/managed.test.js
	@mkdir -p build/services
	gcc -std=c11 -Wall -Wextra -Werror -O1 -g -Iinclude tests/c/services.c -o build/services/c \
	  -Ltarget/release -lrlock -Wl,-rpath,$(CURDIR)/target/release -lpthread
	bash tests/services/c.sh build/services/c $(SERVICES_STANDINS)
	for s in proxy-endpoint evicting; do \
	  CHAOS_STANDIN=$$s timeout 600 $(VENV)/bin/python tests/chaos/run.py $(SERVICES_CHAOS) cancel || exit 1; \
	done
	CHAOS_STANDIN=restricted timeout 600 $(VENV)/bin/python tests/chaos/run.py $(SERVICES_CHAOS)
	INTEROP_JAVA_DIRS="$(INTEROP_LINES)" INTEROP_SCENARIOS="mutex spin" INTEROP_TOPOLOGIES="proxy-endpoint restricted evicting" bash tests/interop/run.sh
