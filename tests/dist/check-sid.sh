#!/usr/bin/env bash
# make dist-check, the CPythons newer than Debian 12's (tests/dist/check.sh runs it after the
# x86_64 checks): the abi3 wheel of dist/ passes the whole Python suite (as `make test-python`
# runs it: tests/ but test_managed.py, the cluster cases on a private cluster) on CPython 3.14 and
# 3.15, each from Debian sid in the sid root (tools/sid-root.sh), in a chroot with the wheel in a
# fresh venv and the servers the suite starts being the root's own redis-server (Redis 8.0, so
# the suite runs on Redis 8 too). The two run one after the other: CI runs them while `make dist`
# still builds beside them (.ci/run), and two suites with 1 to 1.5 s watchdogs beside each other
# and the builds would load the short leases some tests use.
#   RLOCK_SID_PYTHONS   which (default "3.14 3.15")
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
V=$(python3 tools/version.py)
WHEEL=$ROOT/dist/rlock-$V-cp39-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl
TESTBED=$(readlink -f "${RLOCK_TESTBED:-target/release/rlock-testbed}")
[ -f "$WHEEL" ] || { echo "check-sid: missing $WHEEL (run 'make dist')"; exit 1; }
[ -x "$TESTBED" ] || { echo "check-sid: missing $TESTBED (run 'make testbed')"; exit 1; }
ROOTFS=$(bash tools/sid-root.sh)
. tests/dist/chroot.sh
root_enter "$ROOTFS"
# The repository at its own path (the suite finds tests/testbed.py and the docs it checks from
# its files), /tmp (WORK with the venvs, the servers' directories, and the testbed's port locks,
# shared with any testbed outside), /proc and /dev.
for dir in /proc /dev /tmp "$ROOT"; do root_bind "$dir" "$ROOTFS$dir"; done
cp "$TESTBED" "$WORK/rlock-testbed"
in_root() {
  $SUDO chroot "$ROOTFS" env -i PATH=/usr/bin:/bin HOME="$WORK" LANG=C.UTF-8 \
    RLOCK_TESTBED="$WORK/rlock-testbed" RLOCK_SERVER=/usr/bin/redis-server "$@"
}
echo "== dist-check sid: $(in_root /usr/bin/redis-server --version | cut -d' ' -f1-3)"

suite() { # minor version: a venv, the wheel, the whole suite; its output in $WORK/py<minor>.log
  local py=python$1 venv=$WORK/venv$1
  in_root "$py" -m venv "$venv" &&
    in_root "$venv/bin/python" -m pip install -q --disable-pip-version-check --only-binary ':all:' \
      "$WHEEL" -r "$ROOT/bindings-python/requirements-dev.txt" &&
    in_root "$venv/bin/python" -c 'import sys, rlock; print(sys.version.split()[0], rlock.__file__)' &&
    in_root env PATH="$venv/bin:/usr/bin:/bin" bash "$ROOT/tests/python-suite.sh" "$venv/bin/python" \
      -q -p no:cacheprovider tests --ignore=tests/test_managed.py
}

read -r -a versions <<<"${RLOCK_SID_PYTHONS:-3.14 3.15}"
status=0
for v in "${versions[@]}"; do
  if suite "$v" >"$WORK/py$v.log" 2>&1; then
    # Its interpreter and where rlock came from (the wheel, in the venv), then pytest's count.
    echo "python $(grep -m1 "^3\.1[0-9]" "$WORK/py$v.log")"
    tail -n 1 "$WORK/py$v.log"
  else
    tail -n 60 "$WORK/py$v.log"
    echo "check-sid: the Python suite failed on CPython $v (the end of its output above)"
    status=1
  fi
done
[ "$status" != 0 ] || echo "dist-check sid: ok"
exit "$status"
