# shellcheck shell=bash
# Sourced by the CI script: starts a throwaway redis-server on a free loopback port (installing it first on a
# fresh Debian machine), exports AGORA_TEST_REDIS_URL for the Redis tests and defines stop_redis for a trap.
#
#   source .ci/redis.sh
#   trap stop_redis EXIT
#
# Written for sourcing: it returns instead of exiting and leaves the caller's shell options alone.

_agora_redis_install() {
  command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1 && return 0
  echo "redis.sh: installing redis-server with apt-get" >&2
  local sudo=''
  if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null 2>&1; then
      echo "redis.sh: redis-server is missing, and installing it needs root or sudo" >&2
      return 1
    fi
    sudo='sudo'
  fi
  # A fresh machine has empty package lists; -qq keeps CI logs readable, errors still show.
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null &&
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-server >/dev/null ||
    { echo "redis.sh: apt-get install redis-server failed" >&2; return 1; }
  command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1
}

_agora_redis_free_port() {
  # Binding port 0 lets the kernel pick; node is there in any case (this is a Node project), python3 maybe not.
  if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
  else
    node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })'
  fi
}

_agora_redis_start() {
  _agora_redis_install || return 1
  AGORA_REDIS_DIR=$(mktemp -d "${TMPDIR:-/tmp}/agora-redis.XXXXXX") || return 1
  local attempt port tick
  # The port is free when picked but could be taken before redis binds it: try a few.
  for attempt in 1 2 3; do
    port=$(_agora_redis_free_port) || return 1
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
      --dir "$AGORA_REDIS_DIR" --pidfile "$AGORA_REDIS_DIR/redis.pid" --logfile "$AGORA_REDIS_DIR/redis.log" || continue
    for tick in $(seq 1 100); do
      if [ "$(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null)" = PONG ]; then
        AGORA_REDIS_PORT=$port
        export AGORA_TEST_REDIS_URL="redis://127.0.0.1:$port/0"
        echo "redis.sh: redis-server ready at $AGORA_TEST_REDIS_URL (attempt $attempt, ${tick}00 ms)" >&2
        return 0
      fi
      # A daemon that died (port taken) will never answer: stop waiting and pick another port.
      if [ -s "$AGORA_REDIS_DIR/redis.pid" ] && ! kill -0 "$(cat "$AGORA_REDIS_DIR/redis.pid")" 2>/dev/null; then break; fi
      sleep 0.1
    done
    echo "redis.sh: redis-server on port $port did not answer; its log:" >&2
    cat "$AGORA_REDIS_DIR/redis.log" >&2 2>/dev/null
    _agora_redis_kill
  done
  echo "redis.sh: could not start redis-server" >&2
  rm -rf "$AGORA_REDIS_DIR"
  return 1
}

_agora_redis_kill() {
  local pid
  pid=$(cat "$AGORA_REDIS_DIR/redis.pid" 2>/dev/null) || return 0
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; fi
  rm -f "$AGORA_REDIS_DIR/redis.pid"
}

# Stops the redis-server this script started (no snapshot) and removes its folder; safe to call twice.
stop_redis() {
  if [ -n "${AGORA_REDIS_PORT:-}" ]; then
    redis-cli -h 127.0.0.1 -p "$AGORA_REDIS_PORT" shutdown nosave >/dev/null 2>&1 || _agora_redis_kill
  fi
  if [ -n "${AGORA_REDIS_DIR:-}" ]; then rm -rf "$AGORA_REDIS_DIR"; fi
  unset AGORA_REDIS_PORT AGORA_REDIS_DIR AGORA_TEST_REDIS_URL
  return 0
}

_agora_redis_start || return 1 2>/dev/null || exit 1
