#!/usr/bin/env bash
# The cargo that `napi build` runs (mk/node.mk sets CARGO to this script for `make build-node`
# and `make dev-node`). napi-rs always names the target triple, and a cargo build that names
# one keeps its crates in target/<triple>/, apart from the builds that name none: the Node
# addon compiled every dependency once more beside the CLI's, the C library's and the wheel's
# (the same crates with the same features, tools/unify-check.py), about two minutes of both
# cores on a cold machine. For the host's own triple this drops `--target`, so the addon shares
# their dependencies, and links the built addon to where napi copies it from
# (target/<triple>/<profile>/). Any other triple, or no triple, is passed on as it came.
#
# usage: CARGO=tools/napi-cargo.sh napi build ...   (RLOCK_CARGO: the cargo to run; cargo)
set -euo pipefail
cargo=${RLOCK_CARGO:-cargo}
host=$(rustc -vV | sed -n 's/^host: //p')
args=() target=''
while [ $# -gt 0 ]; do
  case "$1" in
    --target) target=$2; shift 2; continue ;;
    --target=*) target=${1#--target=} ;;
    *) args+=("$1") ;;
  esac
  shift
done
if [ "$target" != "$host" ] || [ "${args[0]:-}" != build ]; then
  exec "$cargo" "${args[@]}" ${target:+--target "$target"}
fi
# The build's messages as JSON on stdout (its diagnostics still rendered on stderr): each cdylib
# it made, TARGET_DIR/PROFILE_DIR/NAME.so, is linked to TARGET_DIR/TRIPLE/PROFILE_DIR/NAME.so, where
# napi looks for it. The directories come from the artifact's own path, so a --target-dir or
# CARGO_TARGET_DIR of the build is followed; a build that went to TARGET_DIR/TRIPLE/ already
# (CARGO_BUILD_TARGET set) is left as it is.
"$cargo" "${args[@]}" --message-format=json-render-diagnostics | python3 -c '
import json, os, sys
triple = sys.argv[1]
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        print(line, end="")  # not a message of cargo: pass it on
        continue
    if m.get("reason") == "compiler-artifact" and "cdylib" in m["target"]["crate_types"]:
        for f in m["filenames"]:
            if not f.endswith(".so"):
                continue
            profile_dir = os.path.dirname(os.path.abspath(f))
            target_dir = os.path.dirname(profile_dir)
            if os.path.basename(target_dir) == triple:
                continue  # cargo built into target/<triple>/ itself
            dest = os.path.join(target_dir, triple, os.path.basename(profile_dir))
            os.makedirs(dest, exist_ok=True)
            link = os.path.join(dest, os.path.basename(f))
            if os.path.lexists(link):
                os.unlink(link)
            os.link(f, link)
' "$host"
