#!/usr/bin/env bash
# Inspected hosts beside the opaque tunnel, in one run of one proxy (docs/benchmarks.md, "Inspected
# hosts"): the extra set-up of a new inspected connection, one inspected stream's throughput, and
# the memory an idle inspected connection holds. Published with the load averages, never asserted.
#
# Usage: bench/inspect-bench.sh [--quick] [--out FILE]
#   --quick   200 set-ups, 100 idle connections, 3 s streams (a smoke run)
#   --out     also write the machine facts and the table to FILE (markdown)
# Environment: PROXY_JAVA_OPTS (default: the proxy image's JVM flags, capped at 256 MiB as the
# Docker backend's proxy container is), JAVA_HOME, PROXY_JAR, BENCH_QUIET_WAIT (as proxy-bench.sh).
# Sends traffic only to 127.0.0.1 and 127.0.0.2.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
COUNTS=(--count 1000 --idle 500 --seconds 10)
OUT=
: "${PROXY_JAVA_OPTS:=-XX:-UsePerfData -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:CICompilerCount=1 -Xss512k -XX:MaxRAMPercentage=70 -XX:MaxMetaspaceSize=64m -XX:ReservedCodeCacheSize=24m -XX:TrimNativeHeapInterval=2000 -XX:MaxRAM=256m}"

die() { echo "inspect-bench: $*" >&2; exit 1; }
log() { echo "inspect-bench: $*" >&2; }

while [ $# -gt 0 ]; do
  case "$1" in
    --quick) COUNTS=(--count 200 --idle 100 --seconds 3) ;;
    --out) [ $# -ge 2 ] || die "--out needs a value"; OUT=$(realpath -m "$2"); shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
  shift
done

. "$ROOT/scripts/lib/jdk.sh"
asb_find_jdk jdk || die "looking for a JDK >= 21: none found (set JAVA_HOME)"
JAVA=$JAVA_HOME/bin/java
ulimit -n 16384 2>/dev/null || ulimit -n "$(ulimit -Hn)"

modules=bench
[ -n "${PROXY_JAR:-}" ] || modules=bench,proxy
log "building $modules"
(cd "$ROOT" && ./mvnw -B -q -pl "$modules" -am package -DskipTests) || die "building $modules failed"
quiet_wait=${BENCH_QUIET_WAIT:-180}
for _ in $(seq 1 "$quiet_wait"); do
  awk '{ exit !($1 < 1) }' /proc/loadavg && break
  sleep 1
done
awk '{ exit !($1 < 1) }' /proc/loadavg ||
  log "load average still $(cut -d' ' -f1 /proc/loadavg) after ${quiet_wait} s; measuring anyway (the table says so)"
PROXY_JAR=${PROXY_JAR:-$ROOT/proxy/target/agent-sandbox-proxy.jar}
[ -f "$PROXY_JAR" ] || die "benchmarking: $PROXY_JAR does not exist"

base=/tmp
[ -d /dev/shm ] && [ -w /dev/shm ] && base=/dev/shm
WORK=$(mktemp -d "$base/agent-sandbox-inspect-bench.XXXXXX")
HARNESS=
stop_pid() {
  local pid=$1
  [ -d "/proc/$pid" ] || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do [ -d "/proc/$pid" ] || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
}
cleanup() {
  local status=$?
  [ -n "$HARNESS" ] && stop_pid "$HARNESS"
  if [ -f "$WORK/pids" ]; then
    while read -r pid; do
      grep -qa 'agent-sandbox-proxy' "/proc/$pid/cmdline" 2>/dev/null && stop_pid "$pid"
    done <"$WORK/pids"
  fi
  if [ "$status" = 0 ]; then rm -rf "$WORK"; else log "policy and logs kept in $WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

{
  echo "- when: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "- CPU: $(nproc) × $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'); RAM: $(free -m | awk '/^Mem:/{print $2}') MiB; kernel $(uname -r)"
  echo "- JDK: $("$JAVA" -version 2>&1 | head -1)"
  echo "- agent-sandbox proxy: $PROXY_JAR ($(sha256sum "$PROXY_JAR" | cut -c1-12)), JVM flags: $PROXY_JAVA_OPTS"
} | tee "$WORK/machine.md" >&2

timeout --signal=TERM --kill-after=20 900 \
  "$JAVA" -Xmx1g -cp "$ROOT/bench/target/agent-sandbox-bench.jar" dev.agentsandbox.bench.InspectBench \
  --work "$WORK" --jar "$PROXY_JAR" --java "$JAVA" --java-opts "$PROXY_JAVA_OPTS" \
  --clk-tck "$(getconf CLK_TCK)" --out "$WORK/table.md" "${COUNTS[@]}" &
HARNESS=$!
status=0
wait "$HARNESS" || status=$?
HARNESS=
[ "$status" = 0 ] || die "the harness failed (exit $status)"
if [ -n "$OUT" ]; then
  cat "$WORK/machine.md" "$WORK/table.md" >"$OUT"
  log "wrote $OUT"
fi
