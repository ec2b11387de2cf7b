# Sourced by the demo and test scripts: private redis-servers from rlock-testbed, the one launcher
# every suite uses (testbed/: ports outside the kernel's ephemeral range, started only once they
# answer PING, the server's log printed when one does not come up). Each topology's rlock-testbed
# runs in the background reading commands from a fifo; the EXIT trap closes it, and at that EOF
# rlock-testbed stops its servers and removes their directories. Build it with `make testbed`.
RLOCK_TESTBED=${RLOCK_TESTBED:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/target/release/rlock-testbed}

_rlock_testbed_fds=()
_rlock_testbed_pids=()
_rlock_testbed_dirs=()

_rlock_testbed_stop_all() {
  local fd pid
  for fd in "${_rlock_testbed_fds[@]}"; do exec {fd}>&-; done
  for pid in "${_rlock_testbed_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "${_rlock_testbed_dirs[@]}"
}

# One field of a JSON line, dotted path (url, pid, nodes.0.port): strings as they are, the rest
# as JSON.
rlock_json() {
  python3 -c 'import json, sys
v = json.loads(sys.argv[1])
for k in sys.argv[2].split("."):
    v = v[int(k)] if isinstance(v, list) else v[k]
print(v if isinstance(v, str) else json.dumps(v))' "$1" "$2"
}

# rlock_testbed TOPOLOGY [ARGS...] (see `rlock-testbed --help`): starts it and sets
# RLOCK_TESTBED_JSON (its description), RLOCK_TESTBED_IN and RLOCK_TESTBED_OUT (fds to send it a
# command line and read the JSON answer: kill/restart/stop/cont NODE, log NODE).
rlock_testbed() {
  if [ ! -x "$RLOCK_TESTBED" ]; then
    echo "missing $RLOCK_TESTBED: run 'make testbed'" >&2
    return 1
  fi
  local dir pid
  dir=$(mktemp -d)
  _rlock_testbed_dirs+=("$dir")
  mkfifo "$dir/in" "$dir/out"
  "$RLOCK_TESTBED" "$@" <"$dir/in" >"$dir/out" &
  pid=$!
  exec {RLOCK_TESTBED_IN}>"$dir/in" {RLOCK_TESTBED_OUT}<"$dir/out"
  _rlock_testbed_fds+=("$RLOCK_TESTBED_IN" "$RLOCK_TESTBED_OUT")
  _rlock_testbed_pids+=("$pid")
  trap _rlock_testbed_stop_all EXIT
  if ! read -r -u "$RLOCK_TESTBED_OUT" RLOCK_TESTBED_JSON; then
    # It printed why (and the server's log) on stderr.
    wait "$pid" 2>/dev/null || true
    echo "rlock-testbed $* did not start" >&2
    return 1
  fi
}

# A private redis-server unless REDIS_URL is already set: exports REDIS_URL; sets
# RLOCK_REDIS_PID (the redis-server's pid), RLOCK_REDIS_PORT, RLOCK_REDIS_DIR, RLOCK_REDIS_LOG.
# Arguments go to `rlock-testbed single` (e.g. --requirepass PW, --appendonly).
start_private_redis() {
  if [ -n "${REDIS_URL:-}" ]; then return 0; fi
  rlock_testbed single "$@" || return 1
  RLOCK_REDIS_PID=$(rlock_json "$RLOCK_TESTBED_JSON" pid)
  RLOCK_REDIS_PORT=$(rlock_json "$RLOCK_TESTBED_JSON" port)
  RLOCK_REDIS_DIR=$(rlock_json "$RLOCK_TESTBED_JSON" dir)
  RLOCK_REDIS_LOG=$(rlock_json "$RLOCK_TESTBED_JSON" log)
  REDIS_URL=$(rlock_json "$RLOCK_TESTBED_JSON" url)
  export REDIS_URL
  echo "private redis-server on 127.0.0.1:$RLOCK_REDIS_PORT (log $RLOCK_REDIS_LOG)"
}

# A private 3-master Redis Cluster (node timeout 1 s): exports RLOCK_CLUSTER_URL
# (redis+cluster://...); sets RLOCK_CLUSTER_PIDS. Arguments go to `rlock-testbed cluster`.
start_private_cluster() {
  rlock_testbed cluster "$@" || return 1
  RLOCK_CLUSTER_URL=$(rlock_json "$RLOCK_TESTBED_JSON" url)
  export RLOCK_CLUSTER_URL
  read -r -a RLOCK_CLUSTER_PIDS <<<"$(rlock_json "$RLOCK_TESTBED_JSON" pids | tr -d '[],')"
  echo "private redis cluster on $(rlock_json "$RLOCK_TESTBED_JSON" hosts)"
}
