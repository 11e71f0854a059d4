#!/usr/bin/env bash
# Sandboxed runs against bare `docker run --rm` of the same image and command, for runc and (when
# the daemon has it) runsc, and the microVM backend (software emulation here, `qemu-tcg`, beside
# bare runc; its column adds the VMM's resident memory): median launch-to-first-output and
# whole-run time over N runs.
#   bench/run-bench.sh [RUNS [COLUMN...]]   (RUNS default 10; COLUMNs among runc runsc runsc-warm
#                                     (runsc with a warm pool of 1) runc-pool runsc-pool (cold
#                                     runs on a proxy from serve --docker-proxy-pool 1) qemu-tcg control-plane
#                                     proxy-image,
#                                     default all; needs a Docker daemon and images/build.sh's
#                                     images; the microVM column needs install-host.sh's guest kernel)
# The control-plane column (bench/control-plane-bench.py) times `serve` to ready on the embedded
# store (RUNS starts) and the plan endpoint (200 plans), with no baseline beside it; the proxy-image
# column times the proxy image from `docker start` to ready and its idle memory, RUNS starts, as the
# Docker backend runs it (bench/proxy-image-start.py; needs root). bench/proxy-bench.sh has the
# proxy's other targets beside squid and tinyproxy.
# Prints one JSON line per runtime; the numbers go to docs/benchmarks.md by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/jdk.sh
asb_find_jdk runtime
RUNS=${1:-10}
shift $(( $# > 0 ? 1 : 0 ))
COLUMNS=" ${*:-control-plane proxy-image runc runc-pool runsc runsc-pool runsc-warm qemu-tcg} "
wanted() { [[ "$COLUMNS" == *" $1 "* ]]; }
JAR=cli/target/agent-sandbox.jar
[ -f "$JAR" ] || { asb_find_jdk jdk; ./mvnw -B -q -pl cli -am package -DskipTests; }
docker image inspect agent-sandbox/workload:dev agent-sandbox/proxy:dev >/dev/null 2>&1 ||
  { echo "run-bench: build the images first (images/build.sh)" >&2; exit 1; }

WORK=$(mktemp -d /tmp/asb-run-bench.XXXXXX)
SERVE_PID=
stop_serve() {
  if [ -n "$SERVE_PID" ] && kill -0 "$SERVE_PID" 2>/dev/null; then
    kill "$SERVE_PID"
    for _ in $(seq 1 60); do kill -0 "$SERVE_PID" 2>/dev/null || break; sleep 0.5; done
  fi
  SERVE_PID=
}
trap 'stop_serve; rm -rf "$WORK"' EXIT

# bench RUNTIME GVISOR_NAME [BACKEND ACCEL BARE WARM POOL]: a fresh control plane whose Docker
# backend looks for gVisor under GVISOR_NAME (a name the daemon lacks means runc) and keeps POOL
# pre-started proxies (default 0), whose microVM backend uses ACCEL (default off), one agent on
# BACKEND (default docker) with WARM warm sandboxes (default 0), then the driver.
bench() {
  local runtime=$1 gvisor=$2 backend=${3:-docker} accel=${4:-off} bare=${5:-$1} warm=${6:-0}
  local pool=${7:-0} mode=${6:-0}
  [ "$pool" -gt 0 ] && mode=pool
  local dir="$WORK/$1-$warm-$pool" url=
  mkdir -p "$dir"
  "$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED -jar "$JAR" serve --listen 127.0.0.1:0 \
    --db "jdbc:sqlite:$dir/store.db" --data-dir "$dir" --instance-id "bench-$runtime-$$" \
    --docker-gvisor-runtime "$gvisor" --docker-proxy-pool "$pool" --microvm-accel "$accel" \
    >"$dir/serve.log" 2>&1 &
  SERVE_PID=$!
  for _ in $(seq 1 240); do
    url=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$dir/serve.log" | head -n 1)
    [ -n "$url" ] && break
    kill -0 "$SERVE_PID" 2>/dev/null || { cat "$dir/serve.log" >&2; exit 1; }
    sleep 0.25
  done
  [ -n "$url" ] || { echo "run-bench: serve did not start" >&2; cat "$dir/serve.log" >&2; exit 1; }
  local token
  token=$(cat "$dir/admin-token")
  curl -sSf -X PUT "$url/api/admin/platform/agent-sandbox" -H "Authorization: Bearer $token" \
    -H 'Content-Type: application/json' \
    -d '{"enabled": true, "backend": "'"$backend"'", "reason": "bench", "agents": {"bench": {"allow": [], "image": "agent-sandbox/workload:dev", "ttl_seconds": 300, "warm": '"$warm"'}}}' >/dev/null
  python3 bench/run-bench.py "$url" "$token" bench "$runtime" "$RUNS" "$bare" "$mode"
  stop_serve
}

if wanted control-plane; then
  # What ships: the launcher with the AOT class cache that scripts/serve.sh trains after a build.
  if ! [ cli/target/agent-sandbox.aot -nt "$JAR" ]; then scripts/aot-cache.sh; fi
  python3 bench/control-plane-bench.py bin/agent-sandbox "$RUNS" 200
fi
if wanted proxy-image; then
  python3 bench/proxy-image-start.py "$RUNS" agent-sandbox/proxy:dev
fi
if wanted runc; then
  bench runc no-such-runtime
fi
# The proxy pool (serve --docker-proxy-pool 1): a cold run takes a pre-started proxy.
if wanted runc-pool; then
  bench runc no-such-runtime docker off runc 0 1
fi
if ! wanted runsc-pool; then
  :
elif docker info --format '{{json .Runtimes}}' | grep -q '"runsc"'; then
  bench runsc runsc docker off runsc 0 1
else
  echo '{"runtime": "runsc-pool", "skipped": "the daemon has no runsc runtime"}'
fi
# The warm pool (warm: 1): a run hands its command to a prepared sandbox.
if ! wanted runsc-warm; then
  :
elif docker info --format '{{json .Runtimes}}' | grep -q '"runsc"'; then
  bench runsc runsc docker off runsc 1
else
  echo '{"runtime": "runsc-warm", "skipped": "the daemon has no runsc runtime"}'
fi
if ! wanted runsc; then
  :
elif docker info --format '{{json .Runtimes}}' | grep -q '"runsc"'; then
  bench runsc runsc
else
  echo '{"runtime": "runsc", "skipped": "the daemon has no runsc runtime"}'
fi
if ! wanted qemu-tcg; then
  :
elif [ -f /var/lib/agent-sandbox/microvm/kernel/vmlinuz ] && command -v qemu-system-x86_64 >/dev/null; then
  bench qemu-tcg no-such-runtime microvm tcg runc
else
  echo '{"runtime": "qemu-tcg", "skipped": "no guest kernel or QEMU (scripts/install-host.sh)"}'
fi
