#!/usr/bin/env bash
# make dist-check: each artifact of dist/ installed the way a user installs it, with no Rust
# toolchain reachable (a PATH without cargo or rustc, no CARGO_HOME or RUSTUP_HOME), then the
# README's example for that surface against a private redis-server:
#   Python: a fresh venv, `pip install dist/rlock-*.whl`, `with rlock.lock(...)` and `async with`;
#   Node: an empty npm project, `npm install` of the two tarballs, `await lock.acquire()` from
#         CommonJS and from ESM;
#   C: the tarball unpacked to a prefix, `cc example.c $(pkg-config --cflags --libs rlock)`
#      linked dynamically and statically, both run; the tarball's `rlock` guards a job.
# It also checks the glibc symbol versions of the wheel's module and the addon against the
# declared floor (2.17), the versions every artifact reports, and (with Rust, as any source build
# needs it) that the sdist builds a wheel.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
V=$(python3 tools/version.py)
GLIBC_FLOOR=2.17
DIST=$ROOT/dist
WHEEL=$DIST/rlock-$V-cp39-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl
C=rlock-$V-x86_64-linux-gnu
for f in "$WHEEL" "$DIST/rlock-$V.tar.gz" "$DIST/rlock-$V.tgz" "$DIST/rlock-linux-x64-gnu-$V.tgz" \
  "$DIST/$C.tar.gz" "$DIST/rlock-$V.crate"; do
  [ -f "$f" ] || { echo "dist-check: missing $f (run 'make dist')"; exit 1; }
done
WORK=$(mktemp -d)
. examples/redis.sh
trap 'rm -rf "$WORK"; _rlock_testbed_stop_all' EXIT
start_private_redis

# A PATH without any directory that has cargo or rustc in it.
norust_path() {
  local out="" dir
  IFS=: read -r -a dirs <<<"$PATH"
  for dir in "${dirs[@]}"; do
    [ -n "$dir" ] || continue
    if [ -e "$dir/cargo" ] || [ -e "$dir/rustc" ] || [ -e "$dir/rustup" ]; then continue; fi
    out=${out:+$out:}$dir
  done
  echo "$out"
}
NORUST=(env -u CARGO -u CARGO_HOME -u RUSTUP_HOME -u RUSTC -u RUSTFLAGS -u CARGO_TARGET_DIR
  PATH="$(norust_path)" REDIS_URL="$REDIS_URL")
"${NORUST[@]}" bash -c '! command -v cargo && ! command -v rustc' >/dev/null ||
  { echo "dist-check: cargo or rustc is still reachable"; exit 1; }

# The newest GLIBC_x.y a shared object needs; fails above the floor.
glibc_floor_check() {
  local file=$1 newest
  newest=$(objdump -T "$file" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)
  if [ "$(printf '%s\n%s\n' "$newest" "$GLIBC_FLOOR" | sort -V | tail -1)" != "$GLIBC_FLOOR" ]; then
    echo "dist-check: $(basename "$file") needs GLIBC_$newest, above the floor $GLIBC_FLOOR"
    objdump -T "$file" | grep "GLIBC_$newest" | head
    exit 1
  fi
  echo "glibc: $(basename "$file") needs at most GLIBC_$newest (floor $GLIBC_FLOOR)"
}

echo "== dist-check: Python wheel in a fresh venv"
"${NORUST[@]}" python3 -m venv "$WORK/venv"
"${NORUST[@]}" "$WORK/venv/bin/python" -m pip install -q --only-binary ':all:' "$WHEEL"
glibc_floor_check "$(ls "$WORK"/venv/lib/python3*/site-packages/rlock/_native*.so)"
cat >"$WORK/example.py" <<'EOF'
import asyncio

import rlock

with rlock.lock("orders"):  # held by this thread; the watchdog keeps the lease alive
    assert rlock.lock("orders").is_held()
assert not rlock.lock("orders").locked()


async def main() -> None:
    with rlock.Client() as client:
        lock = client.lock("orders")
        async with lock:  # held by the current task
            assert lock.is_held() and lock.locked()
        assert not lock.locked()


asyncio.run(main())
print(rlock.__version__)
EOF
out=$(cd "$WORK" && "${NORUST[@]}" "$WORK/venv/bin/python" example.py)
[ "$out" = "$V" ] || { echo "dist-check: the Python example printed: $out"; exit 1; }
echo "python: pip install of the wheel, with and async with: ok (rlock.__version__ $out)"

echo "== dist-check: npm packages in an empty project (CommonJS and ESM)"
mkdir -p "$WORK/node"
(cd "$WORK/node" && "${NORUST[@]}" npm init -y >/dev/null &&
  "${NORUST[@]}" npm install --no-audit --no-fund --silent \
    "$DIST/rlock-linux-x64-gnu-$V.tgz" "$DIST/rlock-$V.tgz")
glibc_floor_check "$WORK/node/node_modules/rlock-linux-x64-gnu/rlock.linux-x64-gnu.node"
[ ! -e "$WORK/node/node_modules/rlock/rlock.linux-x64-gnu.node" ] ||
  { echo "dist-check: the main npm package carries an addon of its own"; exit 1; }
cat >"$WORK/node/example.cjs" <<'EOF'
const assert = require('node:assert/strict')
const { Client, version } = require('rlock')

;(async () => {
  const client = new Client()
  const lock = client.lock('orders')
  await lock.acquire() // waits; the watchdog keeps the lease alive
  assert.equal(await lock.isHeld(), true)
  assert.equal(await lock.release(), true)
  await client.close()
  console.log(version)
})()
EOF
cat >"$WORK/node/example.mjs" <<'EOF'
import assert from 'node:assert/strict'
import { Client, version } from 'rlock'

const client = new Client()
const lock = client.lock('orders')
await lock.acquire()
assert.equal(await lock.isHeld(), true)
assert.equal(await lock.release(), true)
assert.equal(await client.withLock('orders', async () => 42), 42)
await client.close()
console.log(version)
EOF
for f in example.cjs example.mjs; do
  out=$(cd "$WORK/node" && "${NORUST[@]}" node "$f")
  [ "$out" = "$V" ] || { echo "dist-check: node $f printed: $out"; exit 1; }
done
echo "node: npm install of the two tarballs, CommonJS and ESM: ok (version $V)"

echo "== dist-check: C tarball unpacked to a prefix, pkg-config, dynamic and static"
mkdir -p "$WORK/c"
tar -C "$WORK/c" -xzf "$DIST/$C.tar.gz"
P=$WORK/c/$C
for f in lib/librlock.so "lib/librlock.so.$V" lib/librlock.so.0 lib/librlock.a include/rlock.h \
  lib/pkgconfig/rlock.pc bin/rlock; do
  [ -e "$P/$f" ] || { echo "dist-check: the C tarball has no $f"; exit 1; }
done
soname=$(objdump -p "$P/lib/librlock.so" | awk '/SONAME/ {print $2}')
[ "$soname" = librlock.so.0 ] || { echo "dist-check: librlock.so's SONAME is '$soname'"; exit 1; }
glibc_floor_check "$P/lib/librlock.so.$V"
glibc_floor_check "$P/bin/rlock"
cp examples/c/example.c "$WORK/c/"
cat >"$WORK/c/version.c" <<'EOF'
#include <stdio.h>
#include <string.h>
#include <rlock.h>
int main(void) {
    puts(rlock_version());
    return strcmp(rlock_version(), RLOCK_VERSION) != 0;
}
EOF
export PKG_CONFIG_PATH=$P/lib/pkgconfig
(
  cd "$WORK/c"
  "${NORUST[@]}" cc example.c -o example $(pkg-config --cflags --libs rlock) -Wl,-rpath,"$P/lib"
  "${NORUST[@]}" cc example.c -o example_static $(pkg-config --cflags rlock) -Wl,-Bstatic \
    $(pkg-config --static --libs-only-L --libs-only-l rlock | sed 's/-lrlock/-lrlock -Wl,-Bdynamic/')
  "${NORUST[@]}" cc version.c -o version $(pkg-config --cflags --libs rlock) -Wl,-rpath,"$P/lib"
)
if objdump -p "$WORK/c/example_static" | grep -q 'NEEDED.*librlock'; then
  echo "dist-check: the static example links librlock.so"; exit 1
fi
for exe in example example_static; do
  out=$("${NORUST[@]}" "$WORK/c/$exe")
  [ "$out" = "holding 'orders'" ] || { echo "dist-check: C $exe printed: $out"; exit 1; }
done
out=$("${NORUST[@]}" "$WORK/c/version")
[ "$out" = "$V" ] || { echo "dist-check: rlock_version() is $out, RLOCK_VERSION differs or not $V"; exit 1; }
out=$("${NORUST[@]}" "$P/bin/rlock" run dist-check --wait 5s -- echo guarded)
[ "$out" = guarded ] || { echo "dist-check: rlock run printed: $out"; exit 1; }
out=$("${NORUST[@]}" "$P/bin/rlock" --version)
[ "$out" = "rlock $V" ] || { echo "dist-check: rlock --version printed: $out"; exit 1; }
echo "c: pkg-config build, dynamic and static, rlock_version() $V, bin/rlock: ok"

echo "== dist-check: the sdist builds a wheel (a source build: Rust is used here)"
# pip from make dist's tool venv (a Debian python3 may come without pip).
CARGO_TARGET_DIR=$ROOT/target "$ROOT/build/dist-tools/bin/python" -m pip wheel -q --no-deps \
  -w "$WORK/sdist-wheel" "$DIST/rlock-$V.tar.gz"
ls "$WORK"/sdist-wheel/rlock-"$V"-*.whl >/dev/null
echo "sdist: builds $(basename "$WORK"/sdist-wheel/rlock-"$V"-*.whl)"

echo "dist-check: every artifact installs and runs without a Rust toolchain"
