#!/usr/bin/env bash
# Runs every benchmark against ONE private redis-server (RedLock's against three more) and writes
# bench/out/results.jsonl (one JSON object per figure), bench/out/results.md (the tables) and
# bench/out/results.png.
# `make bench` builds and installs everything first; run alone, this skips (and says so) a
# surface whose build is missing. BENCH_SECONDS (default 3) is the length of each pairs run.
#
# BENCH_SHORT=1 (`make bench-short`, run by CI): every figure scaled down to about a second or
# less (pairs runs of BENCH_SECONDS=0.5 unless given; fewer acquisitions, requests and locks
# elsewhere), no threshold asserted; but a surface or peer that is skipped, fails or leaves no
# figure fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
short=0
if [ "${BENCH_SHORT:-0}" != 0 ]; then
  short=1
  export BENCH_SHORT=1 BENCH_SECONDS=${BENCH_SECONDS:-0.5}
  echo "== short mode (BENCH_SHORT=1): every figure scaled down, BENCH_SECONDS=$BENCH_SECONDS" >&2
fi
. examples/redis.sh
unset REDIS_URL
start_private_redis
# RedLock's figures: three more independent servers (REDIS_URLS), the Rust core's and the Node
# surface's RedLock and the peer redlock over the same three.
red_urls=""
red_ports=()
for _ in 1 2 3; do
  rlock_testbed single
  red_ports+=("$(rlock_json "$RLOCK_TESTBED_JSON" port)")
  red_urls="$red_urls${red_urls:+,}$(rlock_json "$RLOCK_TESTBED_JSON" url)"
done
red_flush() { for p in "${red_ports[@]}"; do redis-cli -p "$p" FLUSHALL >/dev/null; done; }
mkdir -p bench/out
out=bench/out/results.jsonl
: > "$out"
port=$RLOCK_REDIS_PORT
cli() { redis-cli -p "$port" "$@"; }
step() { echo "== $* ($(date +%T))" >&2; }
skip() {
  if ((short)); then
    echo "== FAILED (short mode): $* was not run; BENCH_SHORT=1 fails when a surface or peer cannot run" >&2
    exit 1
  fi
  echo "== SKIPPED: $*" >&2; echo "{\"bench\":\"skipped\",\"what\":\"$*\"}" >> "$out"
}

# The machine, for the README (and whether this was the short run).
short_field=
if ((short)); then short_field=',"short":true'; fi
{
  cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
  os=$(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME" || uname -s)
  printf '{"bench":"machine","date":"%s","cpu":"%s","cores":%d,"mem_gib":%d,"os":"%s, kernel %s","redis":"%s","load":"%s"%s}\n' \
    "$(date -u +%Y-%m-%d)" "$cpu" "$(nproc)" "$(awk '/MemTotal/ {print int($2/1048576+0.5)}' /proc/meminfo)" \
    "$os" "$(uname -r)" "$(cli INFO server | tr -d '\r' | sed -n 's/^redis_version://p')" \
    "$(cut -d' ' -f1-3 /proc/loadavg)" "$short_field"
} >> "$out"

# 1. Ceiling: redis-benchmark sending rlock's own scripts, N requests in flight:
#    - "pipelined": one connection carrying N requests at a time (-c 1 -P N), as rlock's one
#      multiplexed connection carries at most N owners' requests: what the server can do at
#      that concurrency with a client that costs nothing. This is the ceiling of the ratios.
#    - "connections": N connections, one request each (-c N), for comparison.
#    Acquire: a fresh key per request (the path an uncontended acquire takes). Release: one key
#    held with a huge count by "owner", a fresh latch key per request (hexists, hincrby,
#    pexpire, set latch: a real release's work but PEXPIRE instead of DEL+PUBLISH).
#    Pairs/s = 1 / (1/acquire + 1/release). Pipelined: best of 3 runs each.
#    Short mode: a tenth of the requests (a fifteenth pipelined), one run each.
step "ceiling: redis-benchmark EVALSHA acquire/release with 1, 16, 64, 256 in flight; PING"
# A script file that is missing must fail the run: `$(cat missing)` inside the argument would
# load an empty script, and the ceiling would measure EVALSHA of nothing (it did, 2026-11-23 to
# 2026-11-26, after the scripts moved to core/src/scripts/lua).
# A script is its files in the order core loads them (core/src/scripts/mod.rs: the shared
# functions first, e.g. publish then release).
load_script() {
  local f files=() body sha
  for f in "$@"; do
    f=core/src/scripts/lua/$f.lua
    [ -s "$f" ] || { echo "bench/run.sh: $f is missing or empty" >&2; exit 1; }
    files+=("$f")
  done
  body=$(cat "${files[@]}")
  sha=$(cli SCRIPT LOAD "$body")
  [ "$sha" = "$(printf '%s' "$body" | sha1sum | cut -d' ' -f1)" ] || { echo "bench/run.sh: SCRIPT LOAD of $* gave '$sha'" >&2; exit 1; }
  echo "$sha"
}
acq=$(load_script acquire)
rel=$(load_script publish release)
# The best of $reps runs: a ceiling is what the server can do, and a busy machine only lowers it.
rb() {
  local best=0 v
  for _ in $(seq "$reps"); do
    v=$(redis-benchmark -p "$port" --csv -r 1000000000000 "$@" 2>/dev/null | tail -1 | cut -d, -f2 | tr -d '"')
    best=$(awk -v a="$best" -v b="$v" 'BEGIN { print (b > a ? b : a) }')
  done
  echo "$best"
}
ceiling() { # mode n redis-benchmark-options...
  local mode=$1 n=$2 a r
  shift 2
  cli FLUSHALL >/dev/null
  a=$(rb "$@" EVALSHA "$acq" 1 'bench:ceil:__rand_int__' 30000 owner)
  cli FLUSHALL >/dev/null
  cli HSET bench:ceil:held owner 1000000000000 >/dev/null
  r=$(rb "$@" EVALSHA "$rel" 3 bench:ceil:held 'redisson_lock__channel:{bench:ceil:held}' \
        'redisson_unlock_latch:{bench:ceil:held}:__rand_int__' 0 30000 owner PUBLISH 20000)
  awk -v m="$mode" -v c="$n" -v a="$a" -v r="$r" 'BEGIN { printf "{\"bench\":\"ceiling\",\"mode\":\"%s\",\"clients\":%d,\"acquire_rps\":%.0f,\"release_rps\":%.0f,\"pairs_per_s\":%.0f}\n", m, c, a, r, 1 / (1 / a + 1 / r) }' | tee -a "$out"
}
if ((short)); then
  best_of=1 n_one=2000 n_pipelined=20000 n_connections=10000
else
  best_of=3 n_one=20000 n_pipelined=300000 n_connections=100000
fi
reps=$best_of
ceiling pipelined 1 -c 1 -n "$n_one"
for n in 16 64 256; do
  reps=$best_of ceiling pipelined "$n" -c 1 -P "$n" -n "$n_pipelined"
  reps=1 ceiling connections "$n" -c "$n" -n "$n_connections"
done
cli FLUSHALL >/dev/null
# csv: "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
redis-benchmark -p "$port" -c 1 -n "$n_one" --csv PING 2>/dev/null | tail -1 | tr -d '"' |
  awk -F, '{ printf "{\"bench\":\"ping\",\"rps\":%.0f,\"p50_us\":%.0f,\"p99_us\":%.0f}\n", $2, $5 * 1000, $7 * 1000 }' | tee -a "$out"

# 2-3. Rust core: pairs, then the server's CPU per pair over the pairs runs alone (uncontended
# acquire+release pairs only: the hand-off's waiters would add cheap failed attempts), then the
# one-pair latency and the hand-off.
cli CONFIG RESETSTAT >/dev/null
step "rust core: pairs (1, 16, 64, 256 owners; 1 and 2 connections)"
target/release/rlock-bench pairs pairs2 | tee -a "$out"
# Redis CPU per pair, from the server's counters (acquire script + release script + the batched
# latch DELs): one Redis core serves at most 1e6 / that many pairs/s.
cli INFO commandstats | tr -d '\r' | awk -F'[:=,]' '
  /^cmdstat_evalsha/ {ev=$3; evu=$5}
  /^cmdstat_del/ {d=$3; du=$5}
  END { pairs = ev/2; if (pairs > 0) printf "{\"bench\":\"server_cpu\",\"usec_per_pair\":%.2f,\"ceiling_pairs_per_s\":%.0f}\n", (evu+du)/pairs, 1e6*pairs/(evu+du) }' | tee -a "$out"
step "rust core: one-pair latency, hand-off, the lock family, semaphores"
target/release/rlock-bench latency handoff family semaphore | tee -a "$out"
cli FLUSHALL >/dev/null

step "rust core: RedLock over 3 servers and a plain lock on one of them (pairs 1, 16, 64 owners; hand-off)"
REDIS_URLS=$red_urls target/release/rlock-bench redlock | tee -a "$out"
red_flush

# 4. Watchdog scale.
step "rust core: the cost of metrics, tracing and holder records (pairs with them on and off)"
target/release/rlock-bench observability | tee -a "$out"
cli FLUSHALL >/dev/null

if ((short)); then
  step "rust core: watchdog with 1000 held locks, of distinct tags and of one (short: 0.6 s watchdog timeout, 0.6 s counted)"
else
  step "rust core: watchdog with 1000, 10000 and 100000 held locks, of distinct tags and of one"
fi
target/release/rlock-bench watchdog | tee -a "$out"
cli FLUSHALL >/dev/null

# 5. Redisson (the Java client whose layout rlock shares), measured as the Rust core above:
#    pairs (with Redisson's defaults and tuned, threads and async), one-pair latency, hand-off
#    (defaults and tuned), the lock family, semaphores (tests/interop/redisson, rlock.interop.Bench).
redisson_jar=tests/interop/redisson/target/interop.jar
if command -v java >/dev/null && [ -f "$redisson_jar" ]; then
  step "Redisson: pairs (1, 16, 64, 256 owners; defaults and tuned; threads and async), one-pair latency, hand-off (defaults and tuned), the lock family, semaphores"
  java -cp "$redisson_jar:tests/interop/redisson/target/lib/*" rlock.interop.Bench | tee -a "$out"
  cli FLUSHALL >/dev/null
else
  skip "Redisson ($redisson_jar or java missing: run make bench)"
fi

# 6-7. Surfaces and peers.
if [ -x build/bench/c-bench ]; then
  step "C surface: pairs (1, 16, 64 threads), hand-off"
  build/bench/c-bench "${BENCH_SECONDS:-3}" | tee -a "$out"
  cli FLUSHALL >/dev/null
else
  skip "C surface (build/bench/c-bench missing: run make bench)"
fi
if [ -x build/bench/c-peer ]; then
  step "C peers on hiredis: the SET NX lock (pairs, hand-off), rlock's scripts (pairs)"
  build/bench/c-peer "${BENCH_SECONDS:-3}" | tee -a "$out"
  cli FLUSHALL >/dev/null
else
  skip "C peers (build/bench/c-peer missing: run make bench)"
fi
if [ -x .venv/bin/python ] && .venv/bin/python -c 'import rlock, redis, redis_lock' 2>/dev/null; then
  step "Python surface (threads, asyncio) and peers redis-py Lock, python-redis-lock"
  .venv/bin/python bench/py_bench.py | tee -a "$out"
  cli FLUSHALL >/dev/null
else
  skip "Python surface and peers (.venv with rlock, redis, redis_lock missing: run make bench)"
fi
if [ -d bench/node/node_modules ] && ls bindings-node/*.node >/dev/null 2>&1; then
  step "Node surface and peers redis-semaphore Mutex, redlock; RedLock and redlock over 3 servers"
  REDIS_URLS=$red_urls node bench/node/bench.js | tee -a "$out"
  cli FLUSHALL >/dev/null
  red_flush
else
  skip "Node surface and peers (addon or bench/node/node_modules missing: run make bench)"
fi

step "report"
python3 bench/report.py "$out" > bench/out/results.md
if ((short)); then
  # The plot is no surface: in short mode it may be missing or fail without failing the run.
  if [ -x .venv/bin/python ] && .venv/bin/python -c 'import matplotlib' 2>/dev/null; then
    if .venv/bin/python bench/plot.py "$out" bench/out/results.png; then
      echo "wrote bench/out/results.png" >&2
    else
      echo "== plot failed (not a failure in short mode)" >&2
    fi
  else
    echo "== SKIPPED: plot (matplotlib missing from .venv; not a failure in short mode)" >&2
  fi
elif [ -x .venv/bin/python ] && .venv/bin/python -c 'import matplotlib' 2>/dev/null; then
  .venv/bin/python bench/plot.py "$out" bench/out/results.png && echo "wrote bench/out/results.png" >&2
else
  skip "plot (matplotlib missing from .venv: run make bench)"
fi
cat bench/out/results.md

# Short mode: every surface and peer must have left its figures (a program that printed nothing
# for one, or a row renamed, fails here as a skipped or failing surface did above).
if ((short)); then
  step "short mode: checking that every surface and peer has its figures"
  python3 bench/check_short.py "$out"
fi
