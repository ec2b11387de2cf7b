# Python binding (bindings-python/): a fresh .venv at the repo root with the package installed
# the way users install it (`pip install ./bindings-python`, maturin as the PEP 517 backend).
PYTHON ?= python3
VENV := .venv

.PHONY: build-python dev-python test-python python-prereqs
BUILD_TARGETS += build-python
TEST_TARGETS += test-python

python-prereqs:
	@if ! command -v $(PYTHON) >/dev/null || ! $(PYTHON) -c 'import venv, ensurepip' 2>/dev/null; then \
	  echo "installing python3 and python3-venv"; \
	  $(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-venv >/dev/null; \
	fi

build-python: python-prereqs ## Fresh .venv with ./bindings-python, pytest, mypy and redis-py installed
	@# The debug module make dev-python puts beside the sources would ride along in the wheel.
	rm -rf $(VENV) bindings-python/python/rlock/*.so
	$(PYTHON) -m venv $(VENV)
	@# pip before 21.3 builds a copy of the source tree, which loses the Cargo workspace around it.
	$(VENV)/bin/python -m pip install -q --upgrade pip
	$(VENV)/bin/python -m pip install -q ./bindings-python -r bindings-python/requirements-dev.txt

# A contributor's loop: a debug build of the module into the .venv (made with the test
# requirements when missing), in the workspace's target/debug that `cargo test` shares; then run one test
# with `.venv/bin/python -m pytest bindings-python/tests/test_sync.py -k NAME`.
dev-python: python-prereqs ## Rebuild the Python module in debug into the existing .venv (no fresh venv, no wheel)
	@test -x $(VENV)/bin/python || { $(PYTHON) -m venv $(VENV) && \
	  $(VENV)/bin/python -m pip install -q --upgrade pip && \
	  $(VENV)/bin/python -m pip install -q -r bindings-python/requirements-dev.txt; }
	@test -x $(VENV)/bin/maturin || $(VENV)/bin/python -m pip install -q "maturin>=1.16,<2"
	cd bindings-python && VIRTUAL_ENV=$(abspath $(VENV)) $(abspath $(VENV))/bin/maturin develop -q

test-python: build-python testbed ## Python tests, stub check (mypy.stubtest), mypy --strict on the examples and the package
	@# The cluster tests use the private cluster tests/python-suite.sh starts (RLOCK_CLUSTER_URL).
	@# test_managed.py runs in `make services` (mk/services.mk).
	bash tests/python-suite.sh $(abspath $(VENV))/bin/python -q tests --ignore=tests/test_managed.py
	$(VENV)/bin/python -m mypy.stubtest rlock._native
	$(VENV)/bin/python -m mypy --strict examples/python
	$(VENV)/bin/python -m mypy --strict -p rlock
	@# The other side of rlock/_typing.py's version split (typing, not typing_extensions).
	$(VENV)/bin/python -m mypy --strict --python-version 3.13 -p rlock
