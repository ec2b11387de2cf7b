#!/usr/bin/env bash
# Runs every benchmark against ONE private redis-server and writes bench/out/results.jsonl
# (one JSON object per figure) and bench/out/results.md (the table).
set -euo pipefail
cd "$(dirname "$0")/.."
. examples/redis.sh
unset REDIS_URL
start_private_redis
mkdir -p bench/out
out=bench/out/results.jsonl
: > "$out"
port=${REDIS_URL##*:}; port=${port%/}

# Ceiling: redis-benchmark sending rlock's own acquire and release scripts, and PING.
acq=$(redis-cli -p "$port" SCRIPT LOAD "$(cat core/src/lua/acquire.lua)")
rel=$(redis-cli -p "$port" SCRIPT LOAD "$(cat core/src/lua/release.lua)")
for c in 1 16 64 256; do
  a=$(redis-benchmark -p "$port" -c "$c" -n 100000 -r 100000000 --csv \
        EVALSHA "$acq" 1 'bench:ceil:__rand_int__' 30000 owner 2>/dev/null | tail -1 | cut -d, -f2 | tr -d '"')
  # Release of a key that was never acquired runs the latch check and HEXISTS only; the
  # real release does more, so the pair ceiling below comes from the server's own CPU counters.
  echo "{\"bench\":\"ceiling_acquire\",\"clients\":$c,\"rps\":$a}" >> "$out"
done
redis-cli -p "$port" FLUSHALL >/dev/null
redis-cli -p "$port" CONFIG RESETSTAT >/dev/null
ping=$(redis-benchmark -p "$port" -c 1 -n 20000 --csv PING 2>/dev/null | tail -1)
echo "{\"bench\":\"ping\",\"csv\":\"$(echo "$ping" | tr -d '"')\"}" >> "$out"

REDIS_URL=$REDIS_URL target/release/rlock-bench pairs latency handoff | tee -a "$out"
# Redis CPU per pair, from the server's counters over the pairs run: the physical ceiling.
redis-cli -p "$port" INFO commandstats | tr -d '\r' | awk -F'[:=,]' '
  /^cmdstat_evalsha/ {ev=$3; evu=$5}
  /^cmdstat_del/ {d=$3; du=$5}
  END { pairs = ev/2; if (pairs > 0) printf "{\"bench\":\"server_cpu\",\"usec_per_pair\":%.2f,\"ceiling_pairs_per_s\":%.0f}\n", (evu+du)/pairs, 1e6*pairs/(evu+du) }' | tee -a "$out"
REDIS_URL=$REDIS_URL target/release/rlock-bench watchdog | tee -a "$out"
# Python surface and its peer (redis-py's Lock), when make build-python has made .venv.
if [ -x .venv/bin/python ] && .venv/bin/python -c 'import rlock, redis' 2>/dev/null; then
  REDIS_URL=$REDIS_URL .venv/bin/python bench/py_bench.py | tee -a "$out"
fi
python3 bench/report.py "$out" > bench/out/results.md
cat bench/out/results.md
