#!/usr/bin/env bash
# Builds the C tests against librlock, dynamically and statically linked, and runs both under
# valgrind memcheck against a private redis-server each.
set -euo pipefail
cd "$(dirname "$0")/../.."
. examples/redis.sh
out=${RLOCK_C_OUT:-build/c}  # tools/compat.py runs its own beside `make test`'s
mkdir -p "$out"
CFLAGS=(-std=c11 -Wall -Wextra -Werror -g -O1 -Iinclude)
gcc "${CFLAGS[@]}" tests/c/test_*.c -o "$out/test_dynamic" -Ltarget/release -lrlock -Wl,-rpath,"$PWD/target/release" -lpthread
gcc "${CFLAGS[@]}" tests/c/test_*.c -o "$out/test_static" target/release/librlock.a -lm -ldl -lpthread -lrt

VALGRIND=(valgrind --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite --show-possibly-lost=no --quiet)
for kind in dynamic static; do
  (
    unset REDIS_URL
    start_private_redis
    export RLOCK_TEST_REDIS_PID=$RLOCK_REDIS_PID
    # RedLock's three independent servers: this one and two more.
    RLOCK_RED_URLS=$REDIS_URL
    for _ in 1 2; do
      rlock_testbed single
      RLOCK_RED_URLS="$RLOCK_RED_URLS,$(rlock_json "$RLOCK_TESTBED_JSON" url)"
    done
    export RLOCK_RED_URLS
    start_private_cluster
    redis-cli -u "$REDIS_URL" set wrongtype "not a lock" >/dev/null
    echo "== C tests, $kind, under valgrind"
    "${VALGRIND[@]}" "$out/test_$kind"
  )
done
