#!/usr/bin/env bash
# tools/cpython-ft.sh: prints the path of a free-threaded CPython (built with --disable-gil),
# building it into ${RLOCK_CACHE:-$HOME/.cache/rlock}/runtimes/cpython-<version>t/ first when the
# cache does not have it (once per version, outside any clone; 138 s cold at 2 cores here).
#
# Neither Debian (no -nogil package in bookworm, trixie or sid) nor a registry here ships a
# free-threaded 3.14, and sid's source packages of 3.14 and 3.15 are not served; the Go module
# proxy serves CPython's tagged source tree (github.com/python/cpython at vX.Y.Z+incompatible),
# fetched with the machine's Go as `make toxiproxy` fetches toxiproxy. PyO3 0.30 builds for the
# free-threaded ABI from 3.14 on only, so 3.14 is the oldest free-threaded line rlock can serve.
# The build needs the headers Debian 12's build-essential, libssl-dev, zlib1g-dev and libffi-dev
# give (make deps installs them); modules the suite does not use are left out.
set -euo pipefail

VERSION=3.14.7
cache=${RLOCK_CACHE:-$HOME/.cache/rlock}/runtimes
prefix=$cache/cpython-${VERSION}t
python=$prefix/bin/python${VERSION%.*}t
mkdir -p "$cache"
# Runs at once take turns, so none builds twice; the prefix appears whole or not at all (the
# build installs into a staging directory, moved into place at the end).
exec 9>"$cache/.cpython-${VERSION}t.lock"
flock 9
if [ -x "$python" ]; then
  echo "$python"
  exit 0
fi

GO=$(command -v go || echo /usr/local/go/bin/go)
[ -x "$GO" ] || { echo "cpython-ft.sh needs Go (go1.22 or newer) on PATH to fetch the source" >&2; exit 1; }
# In the cache, so the finished prefix moves into place by a rename.
work=$(mktemp -d "$cache/.cpython-build-XXXXXX")
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
echo "cpython-ft.sh: fetching CPython $VERSION's source from the Go module proxy" >&2
src=$(cd "$work" && GOPATH=$work/gopath GOFLAGS=-mod=mod "$GO" mod download -json \
  "github.com/python/cpython@v$VERSION+incompatible" | python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])')
# The module cache is read-only, and a module zip keeps no file modes.
cp -r "$src" "$work/cpython"
chmod -R u+w "$work/cpython"
cd "$work/cpython"
chmod +x configure install-sh config.guess config.sub Tools/build/*.py 2>/dev/null || true
echo "cpython-ft.sh: building CPython $VERSION with --disable-gil into $prefix" >&2
log=$work/build.log
# Modules no suite needs, left out to save build time (and the test modules, by the flag below).
skip=(_tkinter _curses _curses_panel _dbm _gdbm _sqlite3 readline)
envs=()
for m in "${skip[@]}"; do envs+=("py_cv_module_$m=n/a"); done
if ! { env "${envs[@]}" ./configure --disable-gil --prefix="$prefix" --with-ensurepip=install \
    --disable-test-modules && make -j"$(nproc)" && make install DESTDIR="$work/stage"; } >"$log" 2>&1; then
  tail -n 40 "$log" >&2
  echo "cpython-ft.sh: the build failed (the end of its log above)" >&2
  exit 1
fi
staged=$work/stage$prefix
# Run from the staging directory it finds its library by its own path (no rpath is set).
"$staged/bin/python${VERSION%.*}t" -c 'import sys; assert not sys._is_gil_enabled(), "the GIL is on"' >&2
mv -T "$staged" "$prefix"
echo "$python"
