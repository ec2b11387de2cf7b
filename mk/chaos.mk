# The fault suite across all surfaces (tests/chaos): faults injected into a private redis-server
# while workers in Rust, Python, Node and C hold and wait; `make chaos`, also run by `make test`.
TEST_TARGETS += chaos

.PHONY: chaos build-chaos

build-chaos: deps build-c build-python build-node
	$(RELEASE_BINS)
	@mkdir -p build/chaos
	gcc -std=c11 -Wall -Wextra -Werror -O2 -Iinclude tests/chaos/worker.c -o build/chaos/worker \
	  -Ltarget/release -lrlock -Wl,-rpath,$(CURDIR)/target/release -lpthread -lhiredis

chaos: build-chaos testbed ## Fault suite: SIGKILL, restart, CLIENT KILL, SIGSTOP, cancels, bad input, across surfaces
	timeout 900 $(VENV)/bin/python tests/chaos/run.py
