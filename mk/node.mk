# The Node surface: bindings-node/ (napi-rs v3 addon + hand-written TypeScript wrapper), package
# `rlock`.

NODE_DIR := bindings-node
NPM ?= npm

.PHONY: build-node dev-node node-ts test-node node-deps test-bun test-deno
BUILD_TARGETS += build-node
TEST_TARGETS += test-node test-bun test-deno

node-deps: ## Install node/npm when missing (apt-get), then the package's npm dependencies
	@if ! command -v node >/dev/null || ! command -v npm >/dev/null; then \
	  echo "installing nodejs and npm"; \
	  $(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null; \
	fi
	@$(MAKE) --no-print-directory $(NODE_DIR)/node_modules/.package-lock.json

# Installs only when the lock file changed since the last install. `npm install` (not `npm ci`):
# the committed lock lists just the optional platform packages the registry had for this
# machine, which `npm ci` rejects as out of sync; `npm install` keeps the lock as it is.
$(NODE_DIR)/node_modules/.package-lock.json: $(NODE_DIR)/package-lock.json $(NODE_DIR)/package.json
	cd $(NODE_DIR) && $(NPM) install --no-audit --no-fund
	@touch $@

# Under a lock that `make dist` takes to copy index.js and index.d.ts (CI runs it beside
# `make test`), so it never copies them half rewritten. napi runs cargo through
# tools/napi-cargo.sh, so the addon shares the dependencies the other builds compiled.
NAPI_CARGO := CARGO=$(abspath tools/napi-cargo.sh) RLOCK_CARGO=$(CARGO)
build-node: node-deps ## Build the Node addon and regenerate bindings-node/index.js, index.d.ts
	@mkdir -p build
	cd $(NODE_DIR) && flock ../build/node-generated.lock env $(NAPI_CARGO) $(NPM) run build

# The wrapper's TypeScript sources (bindings-node/rlock.ts and lib/*.ts, tsconfig.json) compiled
# in place, under --strict, to the CommonJS files the package ships (rlock.js, lib/*.js,
# committed: edit the .ts), and the package's types (rlock.d.ts, lib/*.d.ts; the generated blocks of
# lib/types.ts come from core through `make generated`).
NODE_TS := $(NODE_DIR)/rlock.ts $(filter-out %.d.ts,$(wildcard $(NODE_DIR)/lib/*.ts))
node-ts: node-deps ## Compile the Node wrapper's TypeScript (bindings-node/rlock.ts, lib/*.ts) to its .js
	cd $(NODE_DIR) && node_modules/.bin/tsc -p tsconfig.json

# A contributor's loop: the addon in debug (the generated index.js and index.d.ts are the same);
# then run one test with `cd bindings-node && node --test test/lock.test.js`.
dev-node: node-deps node-ts ## Rebuild the Node addon in debug (fast) and compile the wrapper's TypeScript; make build-node makes the release one
	@mkdir -p build
	cd $(NODE_DIR) && flock ../build/node-generated.lock env $(NAPI_CARGO) $(NPM) run build:debug

test-node: deps build-node node-ts testbed ## Node tests (node --test) against private redis-servers; fails on drift
	@git diff --exit-code -- $(NODE_DIR)/index.js $(NODE_DIR)/index.d.ts || \
	  { echo "bindings-node/index.js or index.d.ts drifted from the Rust code: commit the regenerated files"; exit 1; }
	@git diff --exit-code -- $(NODE_TS:.ts=.js) $(NODE_TS:.ts=.d.ts) || \
	  { echo "bindings-node's .js or .d.ts drifted from its TypeScript source: run make node-ts and commit"; exit 1; }
	@# Output git does not have (a new .ts whose output was never added), and output of a .ts
	@# that is gone.
	@new=$$(git status --porcelain --untracked-files=all -- $(NODE_DIR)/rlock.js $(NODE_DIR)/rlock.d.ts $(NODE_DIR)/lib); \
	  [ -z "$$new" ] || { echo "bindings-node: make node-ts wrote files git does not have: $$new"; exit 1; }
	@for f in $(NODE_DIR)/lib/*.js; do [ -e "$${f%.js}.ts" ] || { echo "$$f has no $${f%.js}.ts: remove it"; exit 1; }; done
	@# The emitted types compile under --strict without skipLibCheck, and the shapes users write
	@# type-check (test/types.check.ts).
	cd $(NODE_DIR) && node_modules/.bin/tsc --ignoreConfig --noEmit --strict --lib esnext --types node --module nodenext \
	  --moduleResolution nodenext rlock.d.ts test/types.check.ts
	@# The cluster tests use the private cluster examples/redis.sh starts (RLOCK_CLUSTER_URL).
	@# The suite runs on the Active LTS line, Node 26, from the npm registry into the cache
	@# (tools/runtime.sh), whatever node the machine has: `node --run` starts package.json's test
	@# script with that node first on PATH (the machine's npm may not know Node 26).
	@node=$$(tools/runtime.sh node26) && . examples/redis.sh && start_private_cluster && \
	  cd $(NODE_DIR) && echo "node $$($$node --version)" && PATH="$$(dirname $$node):$$PATH" node --run test

# The Node suite on Bun and Deno (issue 30), each from the npm registry into the cache outside
# the clone (tools/runtime.sh). Every test file runs but link.test.js: it tests the local link
# (calls polled on libuv's own loop), which only Node has; on Bun and Deno calls use the client's
# shared connection (setRuntime in bindings-node/src/lib.rs).
ALT_RUNTIME_TESTS := $(patsubst $(NODE_DIR)/%,%,$(filter-out $(NODE_DIR)/test/link.test.js,\
  $(sort $(wildcard $(NODE_DIR)/test/*.test.js $(NODE_DIR)/test/*.test.mjs))))

test-bun: deps build-node testbed ## The Node suite on Bun (but the Node-only local link tests)
	@bun=$$(tools/runtime.sh bun) && . examples/redis.sh && start_private_cluster && cd $(NODE_DIR) && \
	  echo "bun $$($$bun --version)" && $$bun test --timeout 120000 $(ALT_RUNTIME_TESTS)

test-deno: deps build-node testbed ## The Node suite on Deno (but the Node-only local link tests)
	@deno=$$(tools/runtime.sh deno) && . examples/redis.sh && start_private_cluster && cd $(NODE_DIR) && \
	  $$deno --version | head -1 && $$deno test -A --no-check --unstable-detect-cjs $(ALT_RUNTIME_TESTS)
