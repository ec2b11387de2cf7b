# make bench: not part of make test. Rust core figures now; surfaces and peers join as they land.
.PHONY: bench
bench: deps ## Benchmarks against a private redis-server; writes bench/out/
	$(CARGO) build --release -p rlock-bench
	bash bench/run.sh
