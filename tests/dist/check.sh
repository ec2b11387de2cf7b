#!/usr/bin/env bash
# make dist-check: each artifact of dist/ installed the way a user installs it, with no Rust
# toolchain reachable (a PATH without cargo or rustc, no CARGO_HOME or RUSTUP_HOME), then the
# README's example for that surface against a private redis-server:
#   Python: a fresh venv per CPython 3.9 to 3.13 (pyenv's), `pip install dist/rlock-*.whl`,
#         `with rlock.lock(...)` and `async with`; the whole Python suite on the wheel on
#         CPython 3.14 and 3.15 (Debian sid's, tests/dist/check-sid.sh); the cp314t wheel's
#         whole suite on a free-threaded CPython 3.14 with the GIL off (tests/dist/check-ft.sh);
#   Node: an empty npm project, `npm install` of the two tarballs, `await lock.acquire()` from
#         CommonJS and from ESM, on Node 22, 24 and 26, Bun and Deno (from the npm registry),
#         and the installed package's types checked with tsc against test/types.check.ts;
#   C: the tarball unpacked to a prefix, `cc example.c $(pkg-config --cflags --libs rlock)`
#      linked dynamically and statically, both run; the tarball's `rlock` guards a job.
# It also checks the glibc symbol versions of the wheel's module and the addon against the
# declared floor (2.17), the versions every artifact reports, and (with Rust, as any source build
# needs it) that the sdist builds a wheel.
#
# usage: tests/dist/check.sh [PART...]   (`make dist-check DIST_CHECK_PARTS="..."`)
#   x86_64-gnu  what needs only the x86_64 glibc target's artifacts: the wheel on every CPython
#               (the whole suite on 3.14, 3.15 and free-threaded 3.14) and the C tarball. CI runs
#               it as soon as `make dist` has built that target, while it builds the others:
#               its suites mostly wait on leases, and the builds use what they leave.
#   rest        the rest, which needs every target: npm (its main package is made last), musl,
#               aarch64, the sdist.
#   Both by default.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
V=$(python3 tools/version.py)
GLIBC_FLOOR=2.17
DIST=$ROOT/dist
WHEEL=$DIST/rlock-$V-cp39-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl
C=rlock-$V-x86_64-linux-gnu
read -r -a parts <<<"${*:-x86_64-gnu rest}"
[ "${#parts[@]}" -gt 0 ] || { echo "dist-check: no part named (x86_64-gnu, rest)"; exit 2; }
for p in "${parts[@]}"; do
  case "$p" in x86_64-gnu | rest) ;; *) echo "dist-check: no part '$p' (x86_64-gnu, rest)"; exit 2 ;; esac
done
PARTS=" ${parts[*]} "
part() { [[ "$PARTS" == *" $1 "* ]]; }
need=()
! part x86_64-gnu || need+=("$WHEEL" "$DIST/$C.tar.gz")
! part rest || need+=("$DIST/rlock-$V.tar.gz" "$DIST/rlock-$V.tgz" "$DIST/rlock-linux-x64-gnu-$V.tgz"
  "$DIST/rlock-$V.crate")
for f in "${need[@]}"; do
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

# Fails unless `file` is a static executable (no program interpreter, no shared library needed).
# readelf reads every architecture's ELF, so each architecture's command is checked here.
static_check() {
  if readelf -ld "$1" | grep -E 'INTERP|\(NEEDED\)'; then
    echo "dist-check: $(basename "$1") is not static (above)"; exit 1
  fi
  echo "static: $(basename "$1") needs no shared library"
}

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

# The CPythons the abi3 wheel is checked on: pyenv's (the machine's), each minor version's newest.
PYTHONS=${RLOCK_DIST_PYTHONS:-3.9 3.10 3.11 3.12 3.13}
pyenv_python() {
  local root=${PYENV_ROOT:-$HOME/.pyenv}
  find "$root/versions" -maxdepth 3 -path "*/versions/$1.*/bin/python$1" 2>/dev/null | sort -V | tail -1
}

# The x86_64 glibc target: the wheel, the whole suite beside the C tarball.
if part x86_64-gnu; then
cp tests/dist/example.py "$WORK/example.py"
for pv in $PYTHONS; do
  echo "== dist-check: Python wheel in a fresh venv of CPython $pv"
  py=$(pyenv_python "$pv")
  [ -n "$py" ] || { echo "dist-check: no CPython $pv under ${PYENV_ROOT:-$HOME/.pyenv}/versions" \
    "(RLOCK_DIST_PYTHONS narrows the list)"; exit 1; }
  venv=$WORK/venv-$pv
  "${NORUST[@]}" "$py" -m venv "$venv"
  "${NORUST[@]}" "$venv/bin/python" -m pip install -q --disable-pip-version-check --only-binary ':all:' "$WHEEL"
  glibc_floor_check "$(ls "$venv"/lib/python3*/site-packages/rlock/_native*.so)"
  # typing_extensions comes along only where typing lacks what rlock uses (before 3.12).
  has_te=$("$venv/bin/python" -c 'import importlib.util as u; print(u.find_spec("typing_extensions") is not None)')
  want_te=$("$venv/bin/python" -c 'import sys; print(sys.version_info < (3, 12))')
  [ "$has_te" = "$want_te" ] ||
    { echo "dist-check: CPython $pv: typing_extensions installed: $has_te, expected $want_te"; exit 1; }
  out=$(cd "$WORK" && "${NORUST[@]}" "$venv/bin/python" example.py)
  [ "$out" = "$V" ] || { echo "dist-check: the Python example on $pv printed: $out"; exit 1; }
  echo "python $("$venv/bin/python" -V 2>&1 | cut -d' ' -f2): pip install of the wheel, with and async with: ok"
done

# The whole Python suite on CPython 3.14 and 3.15 (tests/dist/check-sid.sh) runs beside the checks
# that follow (the C tarball's, and with the rest part npm's, musl's and aarch64's): it mostly
# waits on leases, they mostly on installs.
echo "== dist-check: the whole Python suite on the wheel, CPython 3.14 and 3.15, then on the cp314t wheel, free-threaded CPython 3.14 (beside what follows)"
# The free-threaded run (tests/dist/check-ft.sh: the GIL off, no Rust toolchain reachable) comes
# after sid's two, one suite at a time: in CI they run while `make dist` still builds (.ci/run),
# and suites side by side on 2 cores would load the short leases some tests use.
# The exit status: 1 when sid's failed, 2 when the free-threaded one did, 3 both.
python_suites() {
  local status=0
  bash tests/dist/check-sid.sh >"$WORK/sid.log" 2>&1 || status=1
  "${NORUST[@]}" bash tests/dist/check-ft.sh >"$WORK/ft.log" 2>&1 || status=$((status + 2))
  return "$status"
}
python_suites &
suites=$!

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
static_check "$P/bin/rlock"
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
fi

# Every target (the npm main package is made after them all): npm, musl, aarch64.
if part rest; then
echo "== dist-check: npm packages in an empty project (CommonJS and ESM)"
mkdir -p "$WORK/node"
(cd "$WORK/node" && "${NORUST[@]}" npm init -y >/dev/null &&
  "${NORUST[@]}" npm install --no-audit --no-fund --silent \
    "$DIST/rlock-linux-x64-gnu-$V.tgz" "$DIST/rlock-$V.tgz")
glibc_floor_check "$WORK/node/node_modules/rlock-linux-x64-gnu/rlock.linux-x64-gnu.node"
[ ! -e "$WORK/node/node_modules/rlock/rlock.linux-x64-gnu.node" ] ||
  { echo "dist-check: the main npm package carries an addon of its own"; exit 1; }
cp tests/dist/example.cjs "$WORK/node/example.cjs"
cp tests/dist/example.mjs "$WORK/node/example.mjs"
# The runtimes the installed packages are checked on: the supported Node lines (22, 24 and 26;
# 18 and 20 have reached their end of life), Bun and Deno, each from the npm registry into the
# cache (tools/runtime.sh).
RUNTIMES=${RLOCK_DIST_RUNTIMES:-node22 node24 node26 bun deno}
for rt in $RUNTIMES; do
  bin=$(tools/runtime.sh "$rt")
  case "$rt" in
    deno) run=("$bin" run -A) ;;
    *) run=("$bin") ;;
  esac
  for f in example.cjs example.mjs; do
    out=$(cd "$WORK/node" && "${NORUST[@]}" "${run[@]}" "$f")
    [ "$out" = "$V" ] || { echo "dist-check: $rt $f printed: $out"; exit 1; }
  done
  echo "$rt ($("$bin" --version | head -1)): the installed packages, CommonJS and ESM: ok (version $V)"
done
# The installed package's types (what tsc emitted: rlock.d.ts and lib/*.d.ts) resolve and type
# the shapes users write, under --strict and without skipLibCheck.
cp bindings-node/test/types.check.ts "$WORK/node/types.check.ts"
(cd "$WORK/node" && "$ROOT/bindings-node/node_modules/.bin/tsc" --ignoreConfig --noEmit --strict --lib esnext,dom \
  --module nodenext --moduleResolution nodenext types.check.ts) ||
  { echo "dist-check: the installed package's types do not type-check test/types.check.ts"; exit 1; }
echo "the installed package's types: test/types.check.ts type-checks (tsc --strict)"

# The targets make dist built (tools/dist.sh); each one's artifacts are checked.
TARGETS=${RLOCK_DIST_TARGETS:-$(cat tools/dist-targets)}
built() { [[ " $TARGETS " == *" $1 "* ]]; }

if built x86_64-unknown-linux-musl; then
echo "== dist-check: musl (x86_64): the static command, static and dynamic C programs"
# No musl Python or Node comes from the registries: the musllinux wheel and the musl addon are
# checked by auditwheel (make dist), by their NEEDED libraries, and by a load test here; librlock.so,
# built the same way, is loaded by a program linked against musl (Debian's musl-gcc, the host's
# musl loader).
CM=rlock-$V-x86_64-linux-musl
mkdir -p "$WORK/musl"
tar -C "$WORK/musl" -xzf "$DIST/$CM.tar.gz"
PM=$WORK/musl/$CM
for cli in "$DIST"/rlock-cli-"$V"-*-linux; do static_check "$cli"; done
cmp -s "$DIST/rlock-cli-$V-x86_64-linux" "$PM/bin/rlock" || { echo "dist-check: the musl tarball's rlock is not the static one"; exit 1; }
out=$("${NORUST[@]}" "$DIST/rlock-cli-$V-x86_64-linux" run dist-check-musl --wait 5s -- echo guarded)
[ "$out" = guarded ] || { echo "dist-check: the static rlock run printed: $out"; exit 1; }
ZIG=("$ROOT/build/dist-tools/bin/python" -m ziglang)
(
  cd "$WORK/musl"
  cp "$ROOT/examples/c/example.c" .
  "${ZIG[@]}" cc -target x86_64-linux-musl -static -O2 example.c -I"$PM/include" "$PM/lib/librlock.a" -lunwind -o example_static
  musl-gcc -O2 example.c -I"$PM/include" -L"$PM/lib" -lrlock -Wl,-rpath,"$PM/lib" -o example_dynamic
)
static_check "$WORK/musl/example_static"
objdump -p "$WORK/musl/example_dynamic" | grep -q 'NEEDED.*librlock.so.0' ||
  { echo "dist-check: the dynamic musl example does not link librlock.so.0"; exit 1; }
for exe in example_static example_dynamic; do
  out=$("${NORUST[@]}" "$WORK/musl/$exe")
  [ "$out" = "holding 'orders'" ] || { echo "dist-check: musl C $exe printed: $out"; exit 1; }
done
tar -xzOf "$DIST/rlock-linux-x64-musl-$V.tgz" package/rlock.linux-x64-musl.node >"$WORK/musl/addon.node"
python3 -c 'import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); n = [f for f in z.namelist() if f.startswith("rlock/_native")]; sys.stdout.buffer.write(z.read(n[0]))' \
  "$DIST/rlock-$V-cp39-abi3-musllinux_1_2_x86_64.whl" >"$WORK/musl/module.so"
for so in "$PM/lib/librlock.so.$V" "$WORK/musl/addon.node" "$WORK/musl/module.so"; do
  needed=$(objdump -p "$so" | awk '/NEEDED/ {print $2}' | sort -u | tr '\n' ' ')
  [ "$needed" = "libc.musl-x86_64.so.1 " ] ||
    { echo "dist-check: a musl shared object needs '$needed', not musl's libc.musl-x86_64.so.1 alone"; exit 1; }
done
# The load test: a musl-linked program dlopen()s the object with RTLD_NOW under musl's dynamic
# linker. Only the host's symbols (Node's napi_*/uv_*, Python's Py*) are stubbed, exported by the
# program; every other symbol must come from musl's libc, so a glibc-only one fails the load
# (the glibc addon fails it: it needs ld-linux-x86-64.so.2).
musl_load() {
  local so=$1 host=$2 dir out
  dir=$(mktemp -d "$WORK/musl/load.XXXXXX")
  {
    echo '#include <dlfcn.h>'
    echo '#include <stdio.h>'
    nm -D --undefined-only "$so" | awk '{print $NF}' | sed 's/@.*//' | grep -E "$host" | sort -u |
      while read -r s; do echo "char $s[64];"; done
    echo 'int main(int argc, char **argv) {'
    echo '  void *h = argc > 1 ? dlopen(argv[1], RTLD_NOW | RTLD_LOCAL) : NULL;'
    echo '  if (!h) { fprintf(stderr, "%s\n", dlerror()); return 1; }'
    echo '  puts("loaded"); return 0;'
    echo '}'
  } >"$dir/load.c"
  musl-gcc -O0 -rdynamic "$dir/load.c" -o "$dir/load"
  out=$("$dir/load" "$so" 2>&1) || true
  [ "$out" = loaded ] || { echo "dist-check: musl's loader could not load $so: $out"; exit 1; }
}
musl_load "$WORK/musl/addon.node" '^(napi_|node_api_|uv_)'
musl_load "$WORK/musl/module.so" '^_?Py'
echo "musl x86_64: static rlock, C static (zig) and dynamic (musl-gcc, librlock.so), the addon and the wheel's module loaded by musl's loader: ok"
fi

if built aarch64-unknown-linux-gnu && built aarch64-unknown-linux-musl; then
  REDIS_URL=$REDIS_URL bash tests/dist/check-arm64.sh
fi
fi

if part x86_64-gnu; then
echo "== dist-check: the whole Python suite on CPython 3.14 and 3.15 (tests/dist/check-sid.sh), then free-threaded 3.14 (tests/dist/check-ft.sh)"
suites_status=0
wait "$suites" || suites_status=$?
[ $((suites_status & 1)) = 0 ] || { cat "$WORK/sid.log"; echo "dist-check: the Python suite on sid's CPythons failed (above)"; exit 1; }
cat "$WORK/sid.log"
[ $((suites_status & 2)) = 0 ] || { cat "$WORK/ft.log"; echo "dist-check: the Python suite on free-threaded CPython 3.14 failed (above)"; exit 1; }
grep -E "free-threaded, GIL off|[0-9]+ passed|dist-check ft" "$WORK/ft.log"
fi

if part rest; then
echo "== dist-check: the sdist builds a wheel (a source build: Rust is used here)"
# pip from make dist's tool venv (a Debian python3 may come without pip).
CARGO_TARGET_DIR=$ROOT/target "$ROOT/build/dist-tools/bin/python" -m pip wheel -q --no-deps \
  -w "$WORK/sdist-wheel" "$DIST/rlock-$V.tar.gz"
ls "$WORK"/sdist-wheel/rlock-"$V"-*.whl >/dev/null
echo "sdist: builds $(basename "$WORK"/sdist-wheel/rlock-"$V"-*.whl)"
fi

echo "dist-check (${parts[*]}): every artifact of $([ "${#parts[@]}" = 2 ] && echo "dist/" || echo "the part") installs and runs without a Rust toolchain"
