#!/usr/bin/env bash
# The cargo maturin runs in `make dist` (tools/dist.sh sets CARGO to this script): its builds go
# through cargo-zigbuild, as the Node addon's, the C library's and the command's of the same
# target do, so every build of a target links with the one zig wrapper (and compiles C with the
# one zig cc). Cargo's fingerprint of a crate holds its target's linker: with maturin's own
# `--zig`, whose wrapper is another file, the wheel and the builds beside it took turns making
# every dependency of the target stale (seen as `ConfigSettingsChanged`), and each target's
# dependencies were compiled two or three times per `make dist` instead of once.
#
# maturin builds with `cargo rustc --target T`; this runs `cargo-zigbuild rustc --target
# $RLOCK_ZIG_TARGET`, the target as tools/dist.sh gives it to cargo-zigbuild (a glibc target with
# its floor: x86_64-unknown-linux-gnu.2.17). Anything else maturin runs (`cargo metadata`) goes
# to cargo as it came.
#
# usage: CARGO=tools/zig-cargo.sh RLOCK_ZIG_TARGET=ZT maturin build --target T ...
set -euo pipefail
zt=${RLOCK_ZIG_TARGET:?tools/zig-cargo.sh: RLOCK_ZIG_TARGET is not set (tools/dist.sh sets it)}
[ "${1:-}" = rustc ] || exec cargo "$@"
shift
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --target) args+=(--target "$zt"); shift 2; continue ;;
    --target=*) args+=("--target=$zt") ;;
    --) args+=("$@"); break ;;
    *) args+=("$1") ;;
  esac
  shift
done
exec cargo-zigbuild rustc "${args[@]}"
