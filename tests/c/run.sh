#!/usr/bin/env bash
# Builds the C tests against librlock and runs them against a private redis-server each, per
# KIND (the arguments; by default `dynamic static`):
#   dynamic  linked against target/release/librlock.so, under valgrind memcheck
#   static   linked against target/release/librlock.a, under valgrind memcheck
#   asan     linked against the AddressSanitizer build of librlock.a that `make sanitize-c` makes
#            (target/asan/...), the tests built with -fsanitize=address,undefined; no valgrind
set -euo pipefail
cd "$(dirname "$0")/../.."
. examples/redis.sh
out=${RLOCK_C_OUT:-build/c}  # tools/compat.py runs its own beside `make test`'s
mkdir -p "$out"
kinds=("$@")
[ ${#kinds[@]} -gt 0 ] || kinds=(dynamic static)
CFLAGS=(-std=c11 -Wall -Wextra -Werror -g -O1 -Iinclude)
VALGRIND=(valgrind --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite --show-possibly-lost=no --quiet)
for kind in "${kinds[@]}"; do
  case $kind in
    dynamic)
      gcc "${CFLAGS[@]}" tests/c/test_*.c -o "$out/test_dynamic" -Ltarget/release -lrlock -Wl,-rpath,"$PWD/target/release" -lpthread
      run=("${VALGRIND[@]}" "$out/test_dynamic") how="under valgrind" ;;
    static)
      gcc "${CFLAGS[@]}" tests/c/test_*.c -o "$out/test_static" target/release/librlock.a -lm -ldl -lpthread -lrt
      run=("${VALGRIND[@]}" "$out/test_static") how="under valgrind" ;;
    asan)
      # rustc instruments the library but links no sanitizer runtime into a staticlib; gcc's
      # libasan (ASan API v8, as rustc's LLVM) is the program's one runtime.
      gcc "${CFLAGS[@]}" -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer \
        tests/c/test_*.c -o "$out/test_asan" "${RLOCK_ASAN_LIB:?make sanitize-c sets it}" -lm -ldl -lpthread -lrt
      run=(env ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 "$out/test_asan")
      how="under AddressSanitizer, LeakSanitizer and (C side) UBSan" ;;
    *) echo "tests/c/run.sh: unknown kind '$kind' (dynamic, static or asan)" >&2; exit 2 ;;
  esac
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
    echo "== C tests, $kind, $how"
    "${run[@]}"
  )
done
