#!/usr/bin/env bash
# make demo: workers in every built surface contend for one lock; the counter must end exact.
set -euo pipefail
cd "$(dirname "$0")/.."
. examples/redis.sh
start_private_redis

ITER=${DEMO_ITERATIONS:-100}
redis-cli -u "$REDIS_URL" del demo:counter demo:last >/dev/null

pids=()
expected=0
run() { "$@" & pids+=($!); expected=$((expected + ITER)); }

for i in 1 2 3; do run target/release/examples/worker "rust-$i" "$ITER"; done
[ -x build/c/worker ] && for i in 1 2; do run build/c/worker "c-$i" "$ITER"; done
[ -x .venv/bin/python ] && .venv/bin/python -c 'import rlock' 2>/dev/null &&
  for i in 1 2; do run .venv/bin/python examples/python/worker.py "python-$i" "$ITER"; done
[ -f bindings-node/index.js ] && ls bindings-node/*.node >/dev/null 2>&1 &&
  for i in 1 2; do run node examples/node/worker.mjs "node-$i" "$ITER"; done

status=0
for p in "${pids[@]}"; do wait "$p" || status=1; done
count=$(redis-cli -u "$REDIS_URL" get demo:counter)
echo "counter = $count, expected $expected (${#pids[@]} workers x $ITER critical sections)"
if [ "$status" -ne 0 ] || [ "$count" != "$expected" ]; then
  echo "DEMO FAILED"; exit 1
fi
echo "demo ok: every critical section ran alone"

# The rlock command guards a shell job: two at once, one runs, the other gives up (exit 75).
if [ -x target/release/rlock ]; then
  target/release/rlock run demo:job -- sh -c 'echo "job: running under the lock"; sleep 2' &
  job=$!
  until redis-cli -u "$REDIS_URL" exists demo:job | grep -q 1; do sleep 0.05; done
  code=0
  target/release/rlock run demo:job --wait 500ms -- echo "never printed" || code=$?
  wait "$job"
  echo "rlock run: a second job on demo:job gave up after 500ms with exit $code (75: not acquired)"
  [ "$code" -eq 75 ] || { echo "DEMO FAILED"; exit 1; }
fi
