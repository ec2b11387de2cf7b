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
