#!/usr/bin/env bash
# make dist: the release artifacts a user downloads, all in dist/, every version from the one
# workspace version (tools/version.py):
#   rlock-V-cp39-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl   Python, abi3, glibc 2.17
#   rlock-V.tar.gz                                                     Python sdist
#   rlock-V.tgz, rlock-linux-x64-gnu-V.tgz                            npm: the package and its
#                                                                      linux-x64-gnu addon package
#   rlock-V-x86_64-linux-gnu.tar.gz                                    C: lib, include, pkg-config,
#                                                                      bin/rlock
#   rlock-V.crate                                                      Rust (cargo package)
# The native code is linked by zig (maturin --zig, cargo-zigbuild) against glibc 2.17, so the
# artifacts load on any x86-64 Linux with glibc 2.17 or newer; the build tools come from PyPI
# into build/dist-tools (a venv), nothing is installed by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
CARGO=${CARGO:-cargo}
TARGET=x86_64-unknown-linux-gnu
GLIBC=2.17
V=$(python3 tools/version.py)
TOOLS=$ROOT/build/dist-tools
STAGE=$ROOT/build/dist
OUT=$ROOT/dist
# The dist builds have a target dir of their own: `napi build --platform` (make build-node) also
# builds into target/$TARGET/, and the two would take turns rebuilding each other's artifacts.
export CARGO_TARGET_DIR=$ROOT/target/dist
RELEASE=$CARGO_TARGET_DIR/$TARGET/release
# Release artifacts without debug info (the workspace's release profile keeps line tables for
# profiling): the addon is a tenth of the size.
export CARGO_PROFILE_RELEASE_DEBUG=0 CARGO_PROFILE_RELEASE_STRIP=debuginfo

# The build tools, pinned, in their own venv (maturin, zig, cargo-zigbuild, auditwheel).
if ! "$TOOLS/bin/python" -c 'import ziglang' 2>/dev/null || [ ! -x "$TOOLS/bin/cargo-zigbuild" ]; then
  echo "== dist: build tools into $TOOLS"
  rm -rf "$TOOLS"
  python3 -m venv "$TOOLS"
  "$TOOLS/bin/python" -m pip install -q --upgrade pip
  "$TOOLS/bin/python" -m pip install -q "maturin==1.16.*" "ziglang==0.17.*" "cargo-zigbuild==0.24.*" "auditwheel==6.8.*"
fi
# cargo-zigbuild finds zig through `python3 -m ziglang`: the venv's python first on PATH.
export PATH="$TOOLS/bin:$PATH"

rm -rf "$OUT" "$STAGE"
mkdir -p "$OUT" "$STAGE"

echo "== dist: Python wheel (abi3, manylinux2014 = glibc $GLIBC) and sdist"
maturin build --quiet --release --zig --compatibility manylinux2014 --target "$TARGET" \
  -m bindings-python/Cargo.toml -o "$OUT"
maturin sdist -m bindings-python/Cargo.toml -o "$OUT"
# maturin orders the two platform tags the other way round; the name auditwheel (and pip's own
# listing) gives has the PEP 600 tag first. The tags inside the wheel (WHEEL) are the same.
WHEEL=$OUT/rlock-$V-cp39-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl
built=$OUT/rlock-$V-cp39-abi3-manylinux2014_x86_64.manylinux_2_17_x86_64.whl
[ ! -f "$built" ] || mv "$built" "$WHEEL"
[ -f "$WHEEL" ] || { echo "dist: expected $WHEEL, have:"; ls "$OUT"; exit 1; }
[ -f "$OUT/rlock-$V.tar.gz" ] || { echo "dist: no sdist rlock-$V.tar.gz"; ls "$OUT"; exit 1; }
auditwheel show "$WHEEL" | tee "$STAGE/auditwheel.txt"
grep -q 'manylinux_2_17_x86_64' "$STAGE/auditwheel.txt" ||
  { echo "dist: auditwheel does not find the wheel consistent with manylinux_2_17"; exit 1; }
for f in rlock/py.typed rlock/_native.pyi rlock/__init__.py; do
  python3 -c 'import sys, zipfile; sys.exit(sys.argv[2] not in zipfile.ZipFile(sys.argv[1]).namelist())' "$WHEEL" "$f" ||
    { echo "dist: the wheel has no $f"; exit 1; }
done

echo "== dist: Node addon (glibc $GLIBC) and the two npm packages"
"$CARGO" zigbuild --quiet --release --target "$TARGET.$GLIBC" -p rlock-node
# The addon package, napi-rs's layout: bindings-node/npm/linux-x64-gnu.
mkdir -p "$STAGE/npm-linux-x64-gnu"
cp bindings-node/npm/linux-x64-gnu/package.json bindings-node/npm/linux-x64-gnu/README.md "$STAGE/npm-linux-x64-gnu/"
cp "$RELEASE/librlock_node.so" "$STAGE/npm-linux-x64-gnu/rlock.linux-x64-gnu.node"
# The main package: the JS entry points and types, the addon package as an optional dependency
# (what `napi pre-publish` adds), no addon of its own, no development fields.
mkdir -p "$STAGE/npm-rlock"
cp bindings-node/README.md bindings-node/rlock.js bindings-node/rlock.mjs bindings-node/rlock.d.ts \
  bindings-node/index.js bindings-node/index.d.ts "$STAGE/npm-rlock/"
node -e '
const fs = require("fs")
const [src, dst, version] = process.argv.slice(1)
const pkg = JSON.parse(fs.readFileSync(src, "utf8"))
delete pkg.devDependencies
delete pkg.scripts
pkg.files = pkg.files.filter((f) => !f.endsWith(".node"))
pkg.optionalDependencies = { "rlock-linux-x64-gnu": version }
fs.writeFileSync(dst, JSON.stringify(pkg, null, 2) + "\n")
' bindings-node/package.json "$STAGE/npm-rlock/package.json" "$V"
cp LICENSE-MIT LICENSE-APACHE "$STAGE/npm-linux-x64-gnu/"
cp LICENSE-MIT LICENSE-APACHE "$STAGE/npm-rlock/"
(cd "$STAGE/npm-linux-x64-gnu" && npm pack --silent --pack-destination "$OUT" >/dev/null)
(cd "$STAGE/npm-rlock" && npm pack --silent --pack-destination "$OUT" >/dev/null)
for f in "rlock-$V.tgz" "rlock-linux-x64-gnu-$V.tgz"; do
  [ -f "$OUT/$f" ] || { echo "dist: no $f"; ls "$OUT"; exit 1; }
done

echo "== dist: C tarball (librlock glibc $GLIBC, header, pkg-config, the rlock command)"
cargo-zigbuild rustc --quiet --release --target "$TARGET.$GLIBC" -p rlock --features capi --lib \
  --crate-type cdylib --crate-type staticlib -- -C link-arg=-Wl,-soname,librlock.so.0
"$CARGO" zigbuild --quiet --release --target "$TARGET.$GLIBC" -p rlock-cli
C=rlock-$V-x86_64-linux-gnu
CDIR=$STAGE/$C
install -d "$CDIR/lib/pkgconfig" "$CDIR/include" "$CDIR/bin" "$CDIR/share/doc/rlock"
install -m 755 "$RELEASE/librlock.so" "$CDIR/lib/librlock.so.$V"
ln -s "librlock.so.$V" "$CDIR/lib/librlock.so.0"
ln -s librlock.so.0 "$CDIR/lib/librlock.so"
install -m 644 "$RELEASE/librlock.a" "$CDIR/lib/"
# Its objects carry the Rust standard library's debug info (the profile's setting does not reach
# the prebuilt std): stripped, the archive is a fraction of the size.
strip --strip-debug "$CDIR/lib/librlock.a"
install -m 644 include/rlock.h "$CDIR/include/"
install -m 755 "$RELEASE/rlock" "$CDIR/bin/"
# Relocatable: the prefix is wherever the tarball was unpacked.
sed -e 's|@PREFIX@|${pcfiledir}/../..|' -e "s|@VERSION@|$V|" rlock.pc.in >"$CDIR/lib/pkgconfig/rlock.pc"
install -m 644 README.md CHANGELOG.md LICENSE-MIT LICENSE-APACHE "$CDIR/share/doc/rlock/"
tar -C "$STAGE" --owner=0 --group=0 --sort=name -czf "$OUT/$C.tar.gz" "$C"

echo "== dist: Rust crate (cargo doc with warnings as errors; cargo package, verified by a build)"
RUSTDOCFLAGS="-D warnings" "$CARGO" doc --quiet -p rlock --no-deps --features capi
"$CARGO" package --quiet -p rlock --allow-dirty
cp "$CARGO_TARGET_DIR/package/rlock-$V.crate" "$OUT/"

echo "== dist: $OUT"
(cd "$OUT" && ls -l)
