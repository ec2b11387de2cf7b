#!/usr/bin/env bash
# The cargo maturin runs in `make dist` (tools/dist.sh sets CARGO to this script): its builds go
# through cargo-zigbuild, as the Node addon's, the C library's and the command's of the same
# target do, so every build of a target links with the one zig wrapper (and compiles C with the
# one zig cc). Cargo's fingerprint of a crate holds its target's linker: with maturin's own
# `--zig`, whose wrapper is another file, the wheel and the builds beside it took turns making
# every dependency of the target stale (seen as `ConfigSettingsChanged`), and each target's
# dependencies were compiled two or three times per `make dist` instead of once.
#
# A glibc target is given the glibc floor (RLOCK_GLIBC_FLOOR, set by tools/dist.sh) as
# cargo-zigbuild spells it: x86_64-unknown-linux-gnu.2.17. Commands cargo-zigbuild does not
# have (maturin also runs `cargo metadata`) go to cargo as they came.
#
# usage: CARGO=tools/zig-cargo.sh RLOCK_GLIBC_FLOOR=2.17 maturin build --target T ...
set -euo pipefail
floor=${RLOCK_GLIBC_FLOOR:?tools/zig-cargo.sh: RLOCK_GLIBC_FLOOR is not set (tools/dist.sh sets it)}
case "${1:-}" in
  build) sub=zigbuild ;;
  rustc | check | test | run | doc | clippy) sub=$1 ;;
  *) exec cargo "$@" ;;
esac
shift
triple() { case "$1" in *-gnu) echo "$1.$floor" ;; *) echo "$1" ;; esac; }
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --target) args+=(--target "$(triple "$2")"); shift 2; continue ;;
    --target=*) args+=("--target=$(triple "${1#--target=}")") ;;
    --) args+=("$@"); break ;;
    *) args+=("$1") ;;
  esac
  shift
done
exec cargo-zigbuild "$sub" "${args[@]}"
