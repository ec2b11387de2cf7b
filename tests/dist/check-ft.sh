#!/usr/bin/env bash
# make dist-check, free-threaded CPython (tests/dist/check.sh runs it beside its other checks):
# the cp314t wheel of dist/ in a fresh venv of a free-threaded CPython 3.14 (tools/cpython-ft.sh),
# no Rust toolchain reachable; importing rlock leaves the GIL off; then the whole Python suite as
# `make test-python` runs it (tests/ but test_managed.py, the cluster cases on a private cluster),
# with the GIL off, including test_free_threading.py's 64 threads sharing one client.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
V=$(python3 tools/version.py)
WHEEL=$ROOT/dist/rlock-$V-cp314-cp314t-manylinux_2_17_x86_64.manylinux2014_x86_64.whl
[ -f "$WHEEL" ] || { echo "check-ft: missing $WHEEL (run 'make dist')"; exit 1; }
PY=$(bash tools/cpython-ft.sh)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
venv=$WORK/venv
"$PY" -m venv "$venv"
# pytest, redis-py and Hypothesis: what the suite imports (mypy, which `make test-python` also
# installs, types the package and is not part of the suite).
"$venv/bin/python" -m pip install -q --disable-pip-version-check --only-binary ':all:' "$WHEEL" \
  $(grep -E '^(pytest|redis|hypothesis)' bindings-python/requirements-dev.txt)
# PYTHON_GIL is unset throughout: a module that did not declare itself free-threading safe turns
# the GIL back on at import, which this and the suite's own GIL test catch.
env -u PYTHON_GIL "$venv/bin/python" -c '
import sys, sysconfig, rlock
assert sysconfig.get_config_var("Py_GIL_DISABLED"), "not a free-threaded build"
assert not sys._is_gil_enabled(), "importing rlock turned the GIL on"
print(sys.version.split()[0], "free-threaded, GIL off after import:", rlock.__file__)'
env -u PYTHON_GIL bash tests/python-suite.sh "$venv/bin/python" -q -p no:cacheprovider tests --ignore=tests/test_managed.py
echo "dist-check ft: ok"
