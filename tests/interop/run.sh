#!/usr/bin/env bash
# make interop: rlock (tests/interop/rlock) and the real Redisson (tests/interop/redisson)
# share locks, first on one private redis-server, then on a private 3-master Redis Cluster, then
# (the redlock scenario only) on three independent private redis-servers. Each
# scenario runs both programs at once; they coordinate through Redis lists and each asserts its
# half. A scenario passes when both exit 0 and no lock key is left behind.
set -uo pipefail
cd "$(dirname "$0")/../.."
unset REDIS_URL # always private servers, never one from the environment
. examples/redis.sh

RUST=${INTEROP_RUST:-target/release/interop}
# The Maven build outputs, one per Redisson line, space-separated: every scenario runs against
# each (`make interop` passes the 3.x and 4.x builds, mk/interop.mk). Point it elsewhere to try
# another Redisson build (see README.md); INTEROP_JAVA_DIR, one directory, is the older spelling.
JAVA_DIRS=(${INTEROP_JAVA_DIRS:-${INTEROP_JAVA_DIR:-tests/interop/redisson/target}})
SCENARIOS=(${INTEROP_SCENARIOS:-mutex wake-to-java wake-to-rust holds force watchdog fenced rwlock fair spin non-reentrant semaphore permit-semaphore multi-lock latch redlock})
# Scenarios of what Redisson 4.4 added: against an older build each is reported as SKIP (not
# run, not counted as passed).
SINCE_4=" non-reentrant "
TOPOLOGIES=(${INTEROP_TOPOLOGIES:-single cluster three})
# Bound on one scenario: nothing may hang the run.
LIMIT=${INTEROP_TIMEOUT:-120}
# Keys a scenario may leave: its message lists, its data (counters, tallies, recorded tokens and
# grant orders), the fenced lock's token counter, which never expires by design, and release
# latches with a TTL (Redisson 3.52 and 4.7 leave their own to expire). Anything else (a lock hash, a
# read-hold lease key, a fair queue or deadline set, a latch without expiry) is a hold or a
# waiter left behind. rlock's semaphore and count-down latch request latches expire like release
# latches. rlock's holder records (rlock:client:<uuid>) expire on their own; every scenario runs
# with them on, beside the real Redisson, which ignores them.
ALLOWED='^(rlock:client:[0-9a-f-]+|interop:.*:(to-java|to-rust|counter|last|violations|handoffs|tokens|order|readers|shared)|redisson_lock_token:.*|redisson_unlock_latch:.*|\{interop:.*\}:rlock_(permits|countdown)_latch:.*)$'

# The keys on node $1 (host:port) that no scenario may leave behind.
left_on() {
  local cli=(redis-cli -h "${1%:*}" -p "${1##*:}")
  "${cli[@]}" --scan | grep -v -E "$ALLOWED"
  # Latches that would never expire: PTTL -1.
  { "${cli[@]}" --scan --pattern 'redisson_unlock_latch:*'; "${cli[@]}" --scan --pattern '*:rlock_permits_latch:*'; "${cli[@]}" --scan --pattern '*:rlock_countdown_latch:*'; } >"$out/latches"
  sed 's/^/PTTL /' "$out/latches" | "${cli[@]}" | paste -d' ' "$out/latches" - | awk '$2 == -1 { print $1 }'
}

for f in "$RUST" "${JAVA_DIRS[@]/%//interop.jar}"; do
  [ -e "$f" ] || { echo "missing $f: run 'make interop'"; exit 1; }
done
# The Redisson version each build carries, from the name of its jar: what a line says it ran.
redisson_of() {
  local jar
  jar=$(cd "$1/lib" && ls redisson-[0-9]*.jar 2>/dev/null | head -n 1)
  jar=${jar#redisson-}
  echo "${jar%.jar}"
}

passed=0
failed=0
skipped=0
out=$(mktemp -d)
trap 'rm -rf "$out"; _rlock_testbed_stop_all' EXIT
for topo in "${TOPOLOGIES[@]}"; do
  # The redlock scenario runs on three independent servers (topology three), and only there;
  # every other scenario on single and cluster.
  run=()
  for s in "${SCENARIOS[@]}"; do
    if { [ "$s" = redlock ] && [ "$topo" = three ]; } || { [ "$s" != redlock ] && [ "$topo" != three ]; }; then
      run+=("$s")
    fi
  done
  [ "${#run[@]}" -gt 0 ] || continue
  urls=""
  case "$topo" in
    single)
      start_private_redis || exit 1
      url=$REDIS_URL
      nodes=("127.0.0.1:$RLOCK_REDIS_PORT")
      unset REDIS_URL
      ;;
    cluster)
      start_private_cluster || exit 1
      url=$RLOCK_CLUSTER_URL
      # Every node is a master (no replicas): FLUSHALL and the key scan go to each.
      IFS=, read -r -a nodes <<<"$(rlock_json "$RLOCK_TESTBED_JSON" hosts)"
      ;;
    three)
      # Three independent servers, one rlock-testbed each: REDIS_URLS lists them (the first
      # holds the message lists and the data), REDIS_URL is the first.
      nodes=()
      urls=""
      for _ in 1 2 3; do
        rlock_testbed single || exit 1
        nodes+=("127.0.0.1:$(rlock_json "$RLOCK_TESTBED_JSON" port)")
        urls="$urls${urls:+,}$(rlock_json "$RLOCK_TESTBED_JSON" url)"
      done
      url=${urls%%,*}
      echo "three private redis-servers on ${nodes[*]}"
      ;;
    proxy-endpoint | restricted | evicting)
      # A managed-endpoint stand-in of one server (`make services`; docs/operations/managed-services.md).
      rlock_testbed "$topo" || exit 1
      url=$(rlock_json "$RLOCK_TESTBED_JSON" url)
      nodes=("127.0.0.1:$(rlock_json "$RLOCK_TESTBED_JSON" port)")
      echo "$topo stand-in on ${nodes[*]}"
      ;;
    *) echo "unknown topology '$topo' (single, cluster, three, proxy-endpoint, restricted, evicting)"; exit 1 ;;
  esac
  trap 'rm -rf "$out"; _rlock_testbed_stop_all' EXIT # start_private_* set their own trap
  for s in "${run[@]}"; do
    for jdir in "${JAVA_DIRS[@]}"; do
      redisson="Redisson $(redisson_of "$jdir")"
      version=$(redisson_of "$jdir")
      major=${version%%.*} minor=${version#*.}
      minor=${minor%%.*}
      if [[ "$SINCE_4" == *" $s "* ]] && { [ "$major" -lt 4 ] || { [ "$major" -eq 4 ] && [ "$minor" -lt 4 ]; }; }; then
        echo "SKIP $s ($topo, $redisson: it has no such lock before 4.4)"
        skipped=$((skipped + 1))
        continue
      fi
      for n in "${nodes[@]}"; do redis-cli -h "${n%:*}" -p "${n##*:}" flushall >/dev/null; done
      start=$(date +%s%N)
      REDIS_URL=$url REDIS_URLS=$urls timeout "$LIMIT" java -cp "$jdir/interop.jar:$jdir/lib/*" rlock.interop.Main "$s" >"$out/java" 2>&1 &
      jpid=$!
      REDIS_URL=$url REDIS_URLS=$urls timeout "$LIMIT" "$RUST" "$s" >"$out/rust" 2>&1 &
      rpid=$!
      wait "$jpid"; jrc=$?
      wait "$rpid"; rrc=$?
      ms=$((($(date +%s%N) - start) / 1000000))
      secs="$((ms / 1000)).$((ms % 1000 / 100))"
      # Whatever a scenario leaves behind must not be a lock: every hold was released and every
      # waiter left the queue.
      left=$(for n in "${nodes[@]}"; do left_on "$n"; done | sort | tr '\n' ' ')
      sed 's/^/    /' "$out/java" "$out/rust"
      if [ "$jrc" -eq 0 ] && [ "$rrc" -eq 0 ] && [ -z "$left" ]; then
        echo "PASS $s ($topo, $redisson, ${secs}s)"
        passed=$((passed + 1))
      else
        [ -n "$left" ] && echo "    keys left behind: $left"
        echo "FAIL $s ($topo, $redisson, java exit $jrc, rust exit $rrc, ${secs}s)"
        failed=$((failed + 1))
      fi
    done
  done
done
echo "$passed passed, $failed failed, $skipped skipped (not in that Redisson line)"
[ "$failed" -eq 0 ]
