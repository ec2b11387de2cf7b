#!/usr/bin/env bash
# The Python suite as every runner starts it (make test-python, tools/compat.py,
# tests/dist/check-sid.sh): the private cluster of examples/redis.sh named in RLOCK_CLUSTER_URL
# (its cluster cases), then PYTHON -m pytest ARGS in bindings-python/ (paths in ARGS relative to
# it). The cluster stops when this ends.
#
# usage: tests/python-suite.sh PYTHON [PYTEST ARGS...]
set -euo pipefail
py=$1
shift
cd "$(dirname "$0")/.."
. examples/redis.sh
start_private_cluster
cd bindings-python
"$py" -m pytest "$@"
