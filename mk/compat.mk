# The server matrix (issue 29): Redis 6.2 / 7.0 / 7.2 and Valkey 8 / 9 in every mode each supports.
# `make servers` fills the cache outside the clone (tools/servers.sh:
# ${RLOCK_CACHE:-~/.cache/rlock}/servers/<name>-<version>/bin/); `make compat` runs the suites
# against each (tools/compat.py), writes tests/compat/results.json and regenerates
# docs/compatibility.md from it. Any suite runs against one of them with RLOCK_SERVER=<name>-<version>
# (or a path): rlock-testbed starts that binary. Not part of `make test`; CI runs `make compat-ci`
# after it (see docs/compatibility.md for the times).
APT_PACKAGES += libssl-dev build-essential

.PHONY: servers servers-ci compat compat-ci compat-doc

servers: deps ## Build/unpack the matrix's servers into the cache (~/.cache/rlock/servers), idempotent
	bash tools/servers.sh

# Only the servers of CI's subset (tools/compat.py CI_SUBSET): CI skips building the ones only
# `make compat` runs (Redis 7.2.6 from source took about 4 minutes of a cold run's background).
servers-ci: deps ## Build/unpack only the servers `make compat-ci` runs against, idempotent
	bash tools/servers.sh $$(python3 tools/compat.py ci-servers)

compat: servers build-chaos build-c build-python build-node testbed ## Every suite against every cached server and mode; docs/compatibility.md
	python3 tools/compat.py run $(COMPAT_ARGS)
	python3 tools/compat.py doc

# CI's part of the matrix (.ci/run, after `make test`, which built everything it runs; no build
# here, as it runs beside `make dist`): tools/compat.py's CI_SUBSET, failing on any failure. The
# probes and core's failover runs one at a time, then the rest in two lanes side by side
# (tools/compat.py run_lanes; its rules checked first by `compat.py self-test`).
compat-ci: servers-ci ## The matrix's CI subset (after `make test`); fails on any failure
	python3 tools/compat.py self-test
	python3 tools/compat.py run --subset ci --strict --lanes 2

compat-doc: ## Regenerate docs/compatibility.md from tests/compat/results.json
	python3 tools/compat.py doc
