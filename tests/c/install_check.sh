#!/usr/bin/env bash
# `make install PREFIX=<tmp>`, then the README's build line: cc example.c $(pkg-config ...),
# dynamically, and statically with `pkg-config --static`; both binaries run against a private
# redis-server and take a lock. The installed `rlock` command guards a job.
set -euo pipefail
cd "$(dirname "$0")/../.."
. examples/redis.sh
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' RETURN
make --no-print-directory -s install PREFIX="$prefix" >/dev/null
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
cc examples/c/example.c -o "$prefix/example" $(pkg-config --cflags --libs rlock) -Wl,-rpath,"$prefix/lib"
cc examples/c/example.c -o "$prefix/example_static" $(pkg-config --cflags rlock) "$prefix/lib/librlock.a" \
  $(pkg-config --static --libs-only-l rlock | sed 's/-lrlock//')
start_private_redis
out=$("$prefix/example")
[ "$out" = "holding 'orders'" ] || { echo "example printed: $out"; exit 1; }
out=$("$prefix/example_static")
[ "$out" = "holding 'orders'" ] || { echo "static example printed: $out"; exit 1; }
out=$("$prefix/bin/rlock" run install-check --wait 5s -- echo guarded)
[ "$out" = "guarded" ] || { echo "rlock run printed: $out"; exit 1; }
echo "install check: make install + pkg-config build (dynamic and static) + rlock run ok"
