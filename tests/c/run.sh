#!/usr/bin/env bash
# Builds the C tests against librlock and runs them against a private redis-server each, per
# KIND (the arguments; by default `dynamic static`):
#   dynamic  linked against target/release/librlock.so, under valgrind memcheck
#   static   linked against target/release/librlock.a, under valgrind memcheck
#   asan     linked against the AddressSanitizer build of librlock.a that `make sanitize-c` makes
#            (target/asan/...), the tests built with -fsanitize=address,undefined (UBSan
#            trapping: no runtime of its own); no valgrind
#   tsan     the multi-threaded stress alone (tests/c/stress.c), linked against the
#            ThreadSanitizer build of librlock.a that `make sanitize-c` makes (target/tsan/...)
#            and built with -fsanitize=thread; run once with a race planted in the program,
#            which must be reported, then clean: any report fails it, a forked child's too
# The sanitizer kinds link rustc's own runtime of the sanitizer (RLOCK_ASAN_RT, RLOCK_TSAN_RT),
# whole (its interceptors must replace libc's), with the C files compiled, not linked, by gcc:
# GCC 12's libtsan predates entry points rustc's LLVM instruments with (__tsan_memcpy,
# __tsan_memset), and its libasan does not hold the allocator's locks across fork(), so a child
# forked while other threads allocate could hang in malloc (LLVM 17's runtimes do).
# Every kind also runs the stress (tests/c/stress.c, a program of its own): natively for dynamic
# and static (valgrind runs threads one at a time, which is not a stress), under the sanitizers
# for asan and tsan.
set -euo pipefail
cd "$(dirname "$0")/../.."
. examples/redis.sh
out=${RLOCK_C_OUT:-build/c}  # tools/compat.py runs its own beside `make test`'s
mkdir -p "$out"
kinds=("$@")
[ ${#kinds[@]} -gt 0 ] || kinds=(dynamic static)
CFLAGS=(-std=c11 -Wall -Wextra -Werror -g -O1 -Iinclude)
VALGRIND=(valgrind --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite --show-possibly-lost=no --quiet)
# san_link OUT LIB RUNTIME OBJECT...: a program of the objects, the instrumented librlock.a and
# the sanitizer's runtime, whole.
san_link() {
  local program=$1 lib=$2 runtime=$3
  shift 3
  gcc -o "$program" "$@" "$lib" -Wl,--whole-archive "$runtime" -Wl,--no-whole-archive -lm -ldl -lpthread -lrt -lstdc++
}
# Every run of the stress ends within this (it also stops itself: SIGALRM).
STRESS_LIMIT=(timeout -k 10 660)
for kind in "${kinds[@]}"; do
  case $kind in
    dynamic)
      gcc "${CFLAGS[@]}" tests/c/test_*.c -o "$out/test_dynamic" -Ltarget/release -lrlock -Wl,-rpath,"$PWD/target/release" -lpthread
      gcc "${CFLAGS[@]}" tests/c/stress.c -o "$out/stress_dynamic" -Ltarget/release -lrlock -Wl,-rpath,"$PWD/target/release" -lpthread
      run=("${VALGRIND[@]}" "$out/test_dynamic") stress=("$out/stress_dynamic") how="under valgrind" ;;
    static)
      gcc "${CFLAGS[@]}" tests/c/test_*.c -o "$out/test_static" target/release/librlock.a -lm -ldl -lpthread -lrt
      gcc "${CFLAGS[@]}" tests/c/stress.c -o "$out/stress_static" target/release/librlock.a -lm -ldl -lpthread -lrt
      run=("${VALGRIND[@]}" "$out/test_static") stress=("$out/stress_static") how="under valgrind" ;;
    asan)
      ASAN=(-fsanitize=address,undefined -fsanitize-undefined-trap-on-error -fno-sanitize-recover=all -fno-omit-frame-pointer)
      mkdir -p "$out/asan"
      for f in tests/c/test_*.c tests/c/stress.c; do
        gcc "${CFLAGS[@]}" "${ASAN[@]}" -c "$f" -o "$out/asan/$(basename "$f" .c).o"
      done
      san_link "$out/test_asan" "${RLOCK_ASAN_LIB:?make sanitize-c sets it}" "${RLOCK_ASAN_RT:?make sanitize-c sets it}" "$out"/asan/test_*.o
      san_link "$out/stress_asan" "$RLOCK_ASAN_LIB" "$RLOCK_ASAN_RT" "$out/asan/stress.o"
      run=(env ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 "$out/test_asan")
      stress=(env ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 "$out/stress_asan")
      how="under AddressSanitizer, LeakSanitizer and (C side) UBSan" ;;
    tsan)
      gcc "${CFLAGS[@]}" -fsanitize=thread -c tests/c/stress.c -o "$out/stress_tsan.o"
      san_link "$out/stress_tsan" "${RLOCK_TSAN_LIB:?make sanitize-c sets it}" "${RLOCK_TSAN_RT:?make sanitize-c sets it}" "$out/stress_tsan.o"
      run=() stress=(env "TSAN_OPTIONS=halt_on_error=0 exitcode=66 suppressions='$PWD/tests/c/tsan.supp'" "$out/stress_tsan")
      how="under ThreadSanitizer" ;;
    *) echo "tests/c/run.sh: unknown kind '$kind' (dynamic, static, asan or tsan)" >&2; exit 2 ;;
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
    # The stress first: the C tests end by stopping their server (test_server_gone).
    if [ "$kind" = tsan ]; then
      # The sanitizer is really there: a race planted in the program is reported (exit 66).
      echo "== C stress, tsan, a race planted: it must be reported"
      planted=0
      RLOCK_STRESS_ROUNDS=4 RLOCK_STRESS_PLANT_RACE=1 "${STRESS_LIMIT[@]}" "${stress[@]}" >"$out/planted.log" 2>&1 || planted=$?
      if [ "$planted" -ne 66 ] || ! grep -q 'SUMMARY: ThreadSanitizer: data race .*stress.c.* in planted_racer' "$out/planted.log"; then
        cat "$out/planted.log"
        echo "ThreadSanitizer did not report the planted race (exit $planted, log above)" >&2
        exit 1
      fi
      echo "reported (exit 66)"
    fi
    echo "== C stress, $kind, ${how/under valgrind/natively}"
    # Its output is kept and read: a report from a forked child (which leaves with _exit, past
    # the sanitizer's exit code) fails the run too.
    "${STRESS_LIMIT[@]}" "${stress[@]}" 2>&1 | tee "$out/stress-$kind.log"
    if grep -q '^WARNING: ThreadSanitizer\|^==[0-9]*==ERROR: \(Address\|Leak\)Sanitizer' "$out/stress-$kind.log"; then
      echo "the stress's output has a sanitizer report (above)" >&2
      exit 1
    fi
    if [ ${#run[@]} -gt 0 ]; then
      echo "== C tests, $kind, $how"
      "${run[@]}"
    fi
  )
done
