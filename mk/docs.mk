# The documentation (README.md, the package READMEs, docs/): every fenced code block is tagged
# `run` or `no-run`; tools/doc-examples.py extracts the `run` ones and runs them against private
# redis-servers from rlock-testbed (Rust through a generated crate, Python in .venv, Node with the
# built bindings-node, C against librlock, shell with the rlock command), and checks that every
# relative link resolves. tools/dts-docs.py checks that the Node package's types (rlock.d.ts and
# lib/*.d.ts, emitted by tsc) have JSDoc on every declaration and member a user can reach. `make docs-check`, also run by `make test`.
TEST_TARGETS += docs-check

.PHONY: docs-check

docs-check: deps build-python build-node lib-c build-cli testbed ## Run every example of the README and docs/ against private servers; links, .d.ts JSDoc
	python3 tools/doc-examples.py check
	python3 tools/dts-docs.py
	CARGO="$(CARGO)" python3 tools/doc-examples.py run
