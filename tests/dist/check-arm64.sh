#!/usr/bin/env bash
# make dist-check, aarch64 (tests/dist/check.sh runs it after the x86_64 checks): each aarch64
# artifact of dist/ run under qemu-user, against the private redis-server check.sh started
# (REDIS_URL). The glibc ones run in an arm64 Debian root (tools/debian-root.sh: debootstrap,
# cached outside the clone in ${RLOCK_CACHE:-$HOME/.cache/rlock}/arm64-bookworm-<n>, about 5
# minutes once); nothing of arm64 is installed into the host itself.
#   Python: the arm64 python3 in a venv, `pip install` of the aarch64 wheel, the README example;
#   Node: the arm64 Node from the npm registry (tools/runtime.sh node22-arm64), the packages
#         installed by the host's npm for linux/arm64/glibc, CommonJS and ESM examples;
#   C: the arm64 gcc builds the example against the aarch64 tarball, dynamic and static;
#   musl: the static rlock command and a static C example (zig) run on the host through binfmt.
# With --root it only makes that root (and binfmt ready), and needs no server: CI makes it
# beside `make test` on a cold machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
V=$(python3 tools/version.py)
DIST=$ROOT/dist
. tests/dist/chroot.sh
PACKAGES=python3,python3-venv,gcc,libc6-dev,libstdc++6,ca-certificates

# qemu-user for arm64 programs, through binfmt_misc (not mounted by default on these machines),
# before the root is made: debootstrap runs its second stage through it.
[ -e /proc/sys/fs/binfmt_misc/register ] || $SUDO mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
[ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] || $SUDO update-binfmts --enable qemu-aarch64
grep -q enabled /proc/sys/fs/binfmt_misc/qemu-aarch64 || { echo "check-arm64: qemu-aarch64 is not enabled"; exit 1; }

# The number changes with the package list, so an older root is not reused.
ROOTFS=$(bash tools/debian-root.sh arm64-bookworm-1 arm64 bookworm "$PACKAGES")
[ "${1:-}" != --root ] || exit 0
: "${REDIS_URL:?check-arm64.sh runs from tests/dist/check.sh, which starts a redis-server}"
root_enter "$ROOTFS"
root_bind /proc "$ROOTFS/proc"
root_bind /dev "$ROOTFS/dev"
root_bind "$WORK" "$ROOTFS/work"
in_root() { $SUDO chroot "$ROOTFS" env -i PATH=/usr/bin:/bin HOME=/work REDIS_URL="$REDIS_URL" "$@"; }
in_root uname -m | grep -qx aarch64 || { echo "check-arm64: the root does not run as aarch64"; exit 1; }

echo "== dist-check arm64: Python wheel (aarch64, manylinux2014) in a venv of the arm64 python3"
WHEEL=rlock-$V-cp39-abi3-manylinux_2_17_aarch64.manylinux2014_aarch64.whl
cp "$DIST/$WHEEL" "$WORK/"
cp tests/dist/example.py "$WORK/example.py"
in_root python3 -m venv /work/venv
in_root /work/venv/bin/python -m pip install -q --disable-pip-version-check --only-binary ':all:' "/work/$WHEEL"
out=$(in_root sh -c 'cd /work && /work/venv/bin/python example.py')
[ "$out" = "$V" ] || { echo "check-arm64: the Python example printed: $out"; exit 1; }
echo "python $(in_root python3 -V | cut -d' ' -f2) aarch64: the wheel, with and async with: ok"

echo "== dist-check arm64: npm packages (linux/arm64/glibc) on the arm64 Node"
mkdir -p "$WORK/node"
(cd "$WORK/node" && npm init -y >/dev/null &&
  # --force: npm refuses a package of another cpu than the host's even when named explicitly.
  npm install --no-audit --no-fund --silent --force --os=linux --cpu=arm64 --libc=glibc \
    "$DIST/rlock-linux-arm64-gnu-$V.tgz" "$DIST/rlock-$V.tgz")
[ -f "$WORK/node/node_modules/rlock-linux-arm64-gnu/rlock.linux-arm64-gnu.node" ] ||
  { echo "check-arm64: npm did not install the arm64 addon"; exit 1; }
node_bin=$(tools/runtime.sh node22-arm64)
root_bind "$(dirname "$(dirname "$node_bin")")" "$ROOTFS/opt/node"
cp tests/dist/example.cjs "$WORK/node/example.cjs"
cp tests/dist/example.mjs "$WORK/node/example.mjs"
out=$(in_root sh -c 'cd /work/node && /opt/node/bin/node example.cjs')
[ "$out" = "$V" ] || { echo "check-arm64: node example.cjs printed: $out"; exit 1; }
out=$(in_root sh -c 'cd /work/node && /opt/node/bin/node example.mjs')
[ "$out" = "$V" ] || { echo "check-arm64: node example.mjs printed: $out"; exit 1; }
echo "node $(in_root /opt/node/bin/node --version) arm64: the installed packages, CommonJS and ESM: ok"

echo "== dist-check arm64: C tarball (aarch64 glibc), the arm64 gcc, dynamic and static"
C=rlock-$V-aarch64-linux-gnu
tar -C "$WORK" -xzf "$DIST/$C.tar.gz"
cp examples/c/example.c "$WORK/"
in_root sh -c "cd /work && gcc -O2 example.c -I$C/include -L$C/lib -lrlock -Wl,-rpath,/work/$C/lib -o example &&
  gcc -O2 example.c -I$C/include $C/lib/librlock.a -lpthread -ldl -lm -o example_static"
for exe in example example_static; do
  out=$(in_root "/work/$exe")
  [ "$out" = "holding 'orders'" ] || { echo "check-arm64: C $exe printed: $out"; exit 1; }
done
echo "c aarch64 glibc: dynamic and static: ok"

echo "== dist-check arm64: musl: the static rlock command and a static C example (zig), via binfmt"
CLI=$DIST/rlock-cli-$V-aarch64-linux
out=$("$CLI" run dist-check-arm64 --wait 5s -- echo guarded)
[ "$out" = guarded ] || { echo "check-arm64: the static aarch64 rlock run printed: $out"; exit 1; }
CM=rlock-$V-aarch64-linux-musl
tar -C "$WORK" -xzf "$DIST/$CM.tar.gz"
cmp -s "$CLI" "$WORK/$CM/bin/rlock" || { echo "check-arm64: the musl tarball's rlock is not the static one"; exit 1; }
"$ROOT/build/dist-tools/bin/python" -m ziglang cc -target aarch64-linux-musl -static -O2 "$WORK/example.c" \
  -I"$WORK/$CM/include" "$WORK/$CM/lib/librlock.a" -lunwind -o "$WORK/example_musl"
out=$("$WORK/example_musl")
[ "$out" = "holding 'orders'" ] || { echo "check-arm64: the static musl C example printed: $out"; exit 1; }
echo "musl aarch64: static rlock and C static (zig): ok"
echo "dist-check arm64: ok"
