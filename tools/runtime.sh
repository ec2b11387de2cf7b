#!/usr/bin/env bash
# tools/runtime.sh NAME: prints the path of a JS runtime's executable, installing it first when
# the cache does not have it. The runtimes come from the npm registry as packages (a plain npm
# tarball with the binary inside), unpacked into
#   ${RLOCK_CACHE:-$HOME/.cache/rlock}/runtimes/<name>-<version>/
# once per version, outside any clone, so CI pays for a download once per machine.
#
# NAME is one of the keys below: node18 node20 node22 node24 node26 bun deno, each for this machine's
# architecture (x64 or arm64), or with an explicit architecture: node22-arm64 (the arm64 checks
# run that one under qemu-user). Versions are pinned here, the one place they are named.
set -euo pipefail

name=${1:?usage: tools/runtime.sh node18|node20|node22|node24|node26|bun|deno[-x64|-arm64]}
case "$name" in
  *-x64 | *-arm64) arch=${name##*-}; name=${name%-*} ;;
  *)
    case "$(uname -m)" in
      x86_64) arch=x64 ;;
      aarch64 | arm64) arch=arm64 ;;
      *) echo "runtime.sh: no runtime packages for $(uname -m)" >&2; exit 1 ;;
    esac
    ;;
esac

# name -> npm package@version and the executable's path inside it.
case "$name" in
  node18) pkg=node-linux-$arch@18.20.8 bin=bin/node ;;
  node20) pkg=node-linux-$arch@20.20.2 bin=bin/node ;;
  node22) pkg=node-linux-$arch@22.23.3 bin=bin/node ;;
  node24) pkg=node-linux-$arch@24.21.0 bin=bin/node ;;
  node26) pkg=node-linux-$arch@26.12.1 bin=bin/node ;;
  bun) pkg=@oven/bun-linux-$([ "$arch" = x64 ] && echo x64 || echo aarch64)@1.4.5 bin=bin/bun ;;
  deno) pkg=@deno/linux-$arch-glibc@2.9.6 bin=deno ;;
  *) echo "runtime.sh: unknown runtime '$name'" >&2; exit 1 ;;
esac

cache=${RLOCK_CACHE:-$HOME/.cache/rlock}/runtimes
dir=$cache/$(echo "${pkg#@}" | tr '/@' '--')
if [ ! -x "$dir/$bin" ]; then
  mkdir -p "$cache"
  tmp=$(mktemp -d "$cache/.tmp.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  echo "runtime.sh: $pkg from the npm registry into $dir" >&2
  (cd "$tmp" && npm pack --silent "$pkg" >/dev/null)
  mkdir -p "$tmp/unpacked"
  tar -xzf "$tmp"/*.tgz -C "$tmp/unpacked" --strip-components=1
  [ -x "$tmp/unpacked/$bin" ] || chmod +x "$tmp/unpacked/$bin"
  rm -rf "$dir"
  mv "$tmp/unpacked" "$dir"
fi
echo "$dir/$bin"
