#!/usr/bin/env bash
# A Debian root made once into the cache outside the clone, for the checks that need programs
# this machine's Debian 12 does not have: the arm64 root of tests/dist/check-arm64.sh and the
# sid root of tools/sid-root.sh.
#
#   ${RLOCK_CACHE:-$HOME/.cache/rlock}/NAME
#
# debootstrap --variant=minbase from deb.debian.org into NAME.tmp, renamed into place only when
# complete (so a root that exists is whole); its log is NAME.debootstrap.log. Runs that ask at
# once take turns (flock), so none is made twice. Needs root (or sudo) and debootstrap (`make
# deps`). NAME carries a number the callers change with their package list, so an older root is
# not reused.
#
# usage: tools/debian-root.sh NAME ARCH SUITE PACKAGES   (prints the root's path)
set -euo pipefail
[ $# = 4 ] || { echo "usage: tools/debian-root.sh NAME ARCH SUITE PACKAGES" >&2; exit 2; }
name=$1 arch=$2 suite=$3 packages=$4
SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
CACHE=${RLOCK_CACHE:-$HOME/.cache/rlock}
ROOTFS=$CACHE/$name
LOG=$CACHE/$name.debootstrap.log

mkdir -p "$CACHE"
exec 9>"$CACHE/.$name.lock"
flock 9
if [ ! -d "$ROOTFS" ]; then
  echo "debian-root: a Debian $suite root for $arch into $ROOTFS (debootstrap, once)" >&2
  $SUDO rm -rf "$ROOTFS.tmp"
  if ! $SUDO debootstrap --arch="$arch" --variant=minbase --include="$packages" "$suite" "$ROOTFS.tmp" \
    http://deb.debian.org/debian >"$LOG" 2>&1; then
    tail -20 "$LOG" >&2
    echo "debian-root: debootstrap failed (the last lines above; $LOG)" >&2
    exit 1
  fi
  $SUDO mv -T "$ROOTFS.tmp" "$ROOTFS"
fi
echo "$ROOTFS"
