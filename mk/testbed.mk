# The one launcher of private redis-servers, clusters, sentinel sets and TLS servers (testbed/,
# crate rlock-testbed). The Rust tests use its library; every other suite runs its binary through
# examples/redis.sh, tests/testbed.py or bindings-node/test/redis-server.js, which find it here.
RLOCK_TESTBED ?= $(CURDIR)/target/release/rlock-testbed
export RLOCK_TESTBED
# twemproxy, the stand-in for a sharding proxy (rlock-testbed twemproxy, docs/testing.md).
APT_PACKAGES += nutcracker

.PHONY: testbed

testbed: deps ## Build rlock-testbed, the launcher of private redis-servers the test suites use
	$(CARGO) build --release -p rlock-testbed
