#!/usr/bin/env bash
# make interop: rlock (core/examples/interop.rs) and the real Redisson (tests/interop/redisson)
# share locks on one private redis-server. Each scenario runs both programs at once; they
# coordinate through Redis lists and each asserts its half. A scenario passes when both exit 0.
set -uo pipefail
cd "$(dirname "$0")/../.."
unset REDIS_URL # always a private server, never one from the environment
. examples/redis.sh
start_private_redis

RUST=${INTEROP_RUST:-target/debug/examples/interop}
# The Maven build output; point it elsewhere to try another Redisson build (see README.md).
JAVA_DIR=${INTEROP_JAVA_DIR:-tests/interop/redisson/target}
JAVA_CP="$JAVA_DIR/interop.jar:$JAVA_DIR/lib/*"
SCENARIOS=(${INTEROP_SCENARIOS:-mutex wake-to-java wake-to-rust holds force watchdog})
# Bound on one scenario: nothing may hang the run.
LIMIT=${INTEROP_TIMEOUT:-120}

for f in "$RUST" "$JAVA_DIR/interop.jar"; do
  [ -e "$f" ] || { echo "missing $f: run 'make interop'"; exit 1; }
done

passed=0
failed=0
out=$(mktemp -d)
for s in "${SCENARIOS[@]}"; do
  redis-cli -u "$REDIS_URL" flushall >/dev/null
  start=$(date +%s%N)
  timeout "$LIMIT" java -cp "$JAVA_CP" rlock.interop.Main "$s" >"$out/java" 2>&1 &
  jpid=$!
  timeout "$LIMIT" "$RUST" "$s" >"$out/rust" 2>&1 &
  rpid=$!
  wait "$jpid"; jrc=$?
  wait "$rpid"; rrc=$?
  ms=$((($(date +%s%N) - start) / 1000000))
  secs="$((ms / 1000)).$((ms % 1000 / 100))"
  # Whatever a scenario leaves behind must not be a lock: every hold was released.
  left=$(redis-cli -u "$REDIS_URL" --scan --pattern 'interop:*' | grep -v -E ':(to-java|to-rust|counter|last|violations|handoffs)$' || true)
  sed 's/^/    /' "$out/java" "$out/rust"
  if [ "$jrc" -eq 0 ] && [ "$rrc" -eq 0 ] && [ -z "$left" ]; then
    echo "PASS $s (${secs}s)"
    passed=$((passed + 1))
  else
    [ -n "$left" ] && echo "    keys left behind: $left"
    echo "FAIL $s (java exit $jrc, rust exit $rrc, ${secs}s)"
    failed=$((failed + 1))
  fi
done
rm -rf "$out"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
