# make bench: not part of make test. Builds every surface, installs the peers (PyPI into .venv,
# npm into bench/node/node_modules), builds the Redisson side (the interop Maven project's jar,
# rlock.interop.Bench), then runs bench/run.sh against ONE private redis-server.
# make bench-short: the same with BENCH_SHORT=1 (about a second per figure, no threshold); fails
# when a surface or peer is skipped, fails or leaves no figure. CI runs it.
.PHONY: bench bench-short bench-prereqs bench-rust bench-deps bench-c
BENCH_C := build/bench/c-bench
BENCH_C_PEER := build/bench/c-peer

bench-prereqs: deps bench-rust build-node bench-deps bench-c interop-jar testbed

bench: bench-prereqs ## Benchmarks (rlock vs the ceiling, the peers and Redisson) on a private redis-server; writes bench/out/
	bash bench/run.sh

bench-short: bench-prereqs ## make bench scaled down (about a second per figure); fails if a surface or peer no longer runs
	BENCH_SHORT=1 bash bench/run.sh

bench-rust:  # with the other release binaries (mk/cli.mk)
	$(RELEASE_BINS)

# After build-python, which makes .venv anew (under make -j it would wipe the peers otherwise).
bench-deps: build-python node-deps
	$(VENV)/bin/python -m pip install -q -r bench/requirements.txt
	cd bench/node && $(NPM) ci --no-audit --no-fund

bench-c: build-c
	@mkdir -p $(dir $(BENCH_C))
	gcc -std=c11 -Wall -Wextra -Werror -O2 -Iinclude bench/c/bench.c -o $(BENCH_C) \
	  -Ltarget/release -lrlock -Wl,-rpath,$(CURDIR)/target/release -lpthread
	gcc -std=c11 -Wall -Wextra -Werror -O2 bench/c/peer.c -o $(BENCH_C_PEER) -lhiredis -lpthread
