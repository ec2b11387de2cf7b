# Sourced by the demo and test scripts: start a private redis-server on a free loopback port
# in a temporary directory unless REDIS_URL is already set; stop it on exit.
start_private_redis() {
  if [ -n "${REDIS_URL:-}" ]; then return 0; fi
  RLOCK_REDIS_DIR=$(mktemp -d)
  local port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$RLOCK_REDIS_DIR" \
    --logfile "$RLOCK_REDIS_DIR/redis.log" &
  RLOCK_REDIS_PID=$!
  disown "$RLOCK_REDIS_PID" # no job-control chatter when a test kills it on purpose
  trap 'kill "$RLOCK_REDIS_PID" 2>/dev/null || true; rm -rf "$RLOCK_REDIS_DIR"' EXIT
  for _ in $(seq 1 200); do
    if redis-cli -p "$port" ping >/dev/null 2>&1; then break; fi
    sleep 0.05
  done
  export REDIS_URL="redis://127.0.0.1:$port/"
  echo "private redis-server on 127.0.0.1:$port"
}

# Starts a private 3-master Redis Cluster on free loopback ports (node timeout 1 s) in a
# temporary directory, exports RLOCK_CLUSTER_URL (redis+cluster://...), stops it on exit.
start_private_cluster() {
  RLOCK_CLUSTER_DIR=$(mktemp -d)
  RLOCK_CLUSTER_PIDS=()
  local ports=() hosts=() port bus i
  for i in 1 2 3; do
    read -r port bus < <(python3 -c 'import socket
s=[socket.socket() for _ in range(2)]
[x.bind(("127.0.0.1", 0)) for x in s]
print(*[x.getsockname()[1] for x in s])')
    mkdir -p "$RLOCK_CLUSTER_DIR/$port"
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
      --cluster-enabled yes --cluster-port "$bus" --cluster-node-timeout 1000 \
      --dir "$RLOCK_CLUSTER_DIR/$port" --logfile "$RLOCK_CLUSTER_DIR/$port/redis.log" &
    RLOCK_CLUSTER_PIDS+=($!)
    disown $!
    ports+=("$port")
    hosts+=("127.0.0.1:$port")
  done
  trap 'kill "${RLOCK_CLUSTER_PIDS[@]}" ${RLOCK_REDIS_PID:-} 2>/dev/null || true; rm -rf "$RLOCK_CLUSTER_DIR" ${RLOCK_REDIS_DIR:-}' EXIT
  for port in "${ports[@]}"; do
    for _ in $(seq 1 200); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.05; done
  done
  redis-cli --cluster create "${hosts[@]}" --cluster-yes >/dev/null
  for port in "${ports[@]}"; do
    for _ in $(seq 1 200); do
      redis-cli -p "$port" cluster info | grep -q 'cluster_state:ok' && break
      sleep 0.05
    done
  done
  export RLOCK_CLUSTER_URL="redis+cluster://$(IFS=,; echo "${hosts[*]}")/"
  echo "private redis cluster on ${hosts[*]}"
}
