#!/usr/bin/env bash
# make services: runs the C subset (tests/c/services.c, built as $1) on each stand-in named
# after it, each started by rlock-testbed and stopped afterwards.
set -euo pipefail
cd "$(dirname "$0")/../.."
. examples/redis.sh
bin=$1
shift
for standin in "$@"; do
  (
    rlock_testbed "$standin"
    url=$(rlock_json "$RLOCK_TESTBED_JSON" url)
    echo "== C subset on the $standin stand-in ($url)"
    if [ "$standin" = evicting ]; then
      timeout 120 "$bin" "$url" volatile-lru
    else
      timeout 120 "$bin" "$url"
    fi
  )
done
