#!/usr/bin/env bash
# Sessions through the real API of a real `serve` (the packaged jar, SQLite, Docker backend,
# loopback only), beside the Docker CLI in the same run.
#   bench/session-api-bench.sh latency [OPENS [STEPS [FILES]]]   (default 30, 100, 20)
#     per runtime the daemon has (runc forced with --docker-gvisor-runtime no-such-runtime, then
#     runsc): warm opens (`warm: 2`) beside bare `docker run`, `echo hi` steps beside `docker exec`
#     of the same container, 1 MiB put then get (bench/session_api.py)
#   bench/session-api-bench.sh density [SESSIONS [PARALLEL]]     (default 100, 4)
#     runsc only, `serve --max-runs SESSIONS`: SESSIONS idle sessions open at once, memory per
#     session (proxy, sandbox, control plane, shims, host), a step each, then all closed and
#     nothing of theirs left (bench/session_density.py)
# Needs the Docker daemon and images/build.sh's images. Prints one JSON line per column, with the
# load average; the numbers go to docs/benchmarks.md by hand, as a measurement, never a test.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/jdk.sh
asb_find_jdk runtime
MODE=${1:-latency}
JAR=cli/target/agent-sandbox.jar
[ -f "$JAR" ] || { asb_find_jdk jdk; ./mvnw -B -q -ntp -pl cli -am package -DskipTests; }
docker image inspect agent-sandbox/workload:dev agent-sandbox/proxy:dev >/dev/null 2>&1 ||
  { echo "session-api-bench: build the images first (images/build.sh)" >&2; exit 1; }

WORK=$(mktemp -d /tmp/asb-session-bench.XXXXXX)
SERVE_PID=
stop_serve() {
  if [ -n "$SERVE_PID" ] && kill -0 "$SERVE_PID" 2>/dev/null; then
    kill "$SERVE_PID"
    for _ in $(seq 1 240); do kill -0 "$SERVE_PID" 2>/dev/null || break; sleep 0.5; done
  fi
  SERVE_PID=
}
# serve's logs outlive the run (the store and tokens do not): what failed is read there.
keep_logs() {
  local kept=/tmp/asb-session-bench-logs.$$ log
  for log in "$WORK"/*/serve.log; do
    [ -f "$log" ] || continue
    mkdir -p "$kept" && cp "$log" "$kept/$(basename "$(dirname "$log")").log"
  done
  [ -d "$kept" ] && echo "session-api-bench: serve's logs are in $kept" >&2
  return 0
}
trap 'stop_serve; keep_logs; rm -rf "$WORK"' EXIT

# serve_with NAME GVISOR WARM MAX_RUNS: a fresh control plane (no proxy pool) whose Docker backend
# looks for gVisor under GVISOR (a name the daemon lacks means runc), one agent `bench` with WARM
# warm sandboxes; sets URL and TOKEN.
serve_with() {
  local dir="$WORK/$1"
  mkdir -p "$dir"
  "$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED -jar "$JAR" serve --listen 127.0.0.1:0 \
    --db "jdbc:sqlite:$dir/store.db" --data-dir "$dir" --instance-id "session-bench-$1-$$" \
    --docker-gvisor-runtime "$2" --docker-proxy-pool 0 --max-runs "$4" >"$dir/serve.log" 2>&1 &
  SERVE_PID=$!
  URL=
  for _ in $(seq 1 240); do
    URL=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$dir/serve.log" | head -n 1)
    [ -n "$URL" ] && break
    kill -0 "$SERVE_PID" 2>/dev/null || { cat "$dir/serve.log" >&2; exit 1; }
    sleep 0.25
  done
  [ -n "$URL" ] || { echo "session-api-bench: serve did not start" >&2; cat "$dir/serve.log" >&2; exit 1; }
  TOKEN=$(cat "$dir/admin-token")
  curl -sSf -X PUT "$URL/api/admin/platform/agent-sandbox" -H "Authorization: Bearer $TOKEN" \
    -H 'Content-Type: application/json' \
    -d '{"enabled": true, "backend": "docker", "reason": "session bench", "agents": {"bench": {"allow": [], "image": "agent-sandbox/workload:dev", "ttl_seconds": 3600, "warm": '"$3"'}}}' >/dev/null
}

has_runsc() { docker info --format '{{json .Runtimes}}' | grep -q '"runsc"'; }

case "$MODE" in
  latency)
    OPENS=${2:-30} STEPS=${3:-100} FILES=${4:-20}
    serve_with runc no-such-runtime 2 16
    python3 bench/session_api.py "$URL" "$TOKEN" runc "$OPENS" "$STEPS" "$FILES"
    stop_serve
    if has_runsc; then
      serve_with runsc runsc 2 16
      python3 bench/session_api.py "$URL" "$TOKEN" runsc "$OPENS" "$STEPS" "$FILES"
      stop_serve
    else
      echo '{"runtime": "runsc", "skipped": "the daemon has no runsc runtime"}'
    fi
    ;;
  density)
    SESSIONS=${2:-100} PARALLEL=${3:-4}
    has_runsc || { echo '{"mode": "density", "skipped": "the daemon has no runsc runtime"}'; exit 0; }
    serve_with density runsc 0 "$SESSIONS"
    (cd bench && python3 session_density.py "$URL" "$TOKEN" "$SERVE_PID" runsc "$SESSIONS" "$PARALLEL")
    stop_serve
    ;;
  *)
    echo "usage: bench/session-api-bench.sh latency [OPENS [STEPS [FILES]]] | density [SESSIONS [PARALLEL]]" >&2
    exit 2
    ;;
esac
