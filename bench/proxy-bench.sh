#!/usr/bin/env bash
# Compares the agent-sandbox egress proxy with Debian's squid and tinyproxy on loopback, with the
# same allow-list for all three and a direct connection as the baseline. See docs/benchmarks.md.
#
# Usage: bench/proxy-bench.sh [--quick] [--targets LIST] [--out FILE]
#   --quick          small counts and 1 s windows: a smoke run of under a minute per target
#   --targets LIST   comma-separated subset of direct,agent-sandbox,squid,tinyproxy (default: all)
#   --out FILE       also write the machine facts and the table to FILE (markdown)
# Environment:
#   PROXY_JAVA_OPTS  JVM flags for our proxy (default: the proxy image's PROXY_JVM_FLAGS, capped at
#                    256 MiB like the Docker backend's default proxy container; not its AOT cache,
#                    which only fits the image's own runtime and jar: bench/proxy-image-start.py
#                    measures the image's start)
#   JAVA_HOME        a JDK >= 21 (otherwise one is looked for under /usr/lib/jvm)
#   PROXY_JAR        benchmark this proxy jar instead of building proxy/ (e.g. a candidate fix)
#   PROXY_LABEL      its column name in the table (default: agent-sandbox)
#   BENCH_QUIET_WAIT seconds to wait after the build for the load average to fall under 1
#                    (default 180; the run then starts anyway and its table records the load)
#
# Needs root: tinyproxy resolves names only through the C library, so it runs in a private mount
# namespace with the bench's hosts file bind-mounted over /etc/hosts (the machine's file is never
# touched). Sends traffic only to 127.0.0.1 and 127.0.0.2.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
QUICK=()
TARGETS=direct,agent-sandbox,squid,tinyproxy
OUT=
: "${PROXY_JAVA_OPTS:=-XX:-UsePerfData -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:CICompilerCount=1 -Xss512k -XX:MaxRAMPercentage=70 -XX:MaxMetaspaceSize=64m -XX:ReservedCodeCacheSize=24m -XX:TrimNativeHeapInterval=2000 -XX:MaxRAM=256m}"

die() { echo "proxy-bench: $*" >&2; exit 1; }
log() { echo "proxy-bench: $*" >&2; }

while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=(--quick) ;;
    --targets) [ $# -ge 2 ] || die "--targets needs a value"; TARGETS=$2; shift ;;
    --out) [ $# -ge 2 ] || die "--out needs a value"; OUT=$(realpath -m "$2"); shift ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
  shift
done

[ "$(id -u)" = 0 ] || die "running the benchmark as $(id -un): needs root (tinyproxy gets its own mount namespace for the bench hosts file)"
command -v unshare >/dev/null || die "running the benchmark: unshare is missing (apt-get install util-linux)"

. "$ROOT/scripts/lib/jdk.sh"
asb_find_jdk jdk || die "looking for a JDK >= 21: none found (set JAVA_HOME)"
JAVA=$JAVA_HOME/bin/java

# squid and tinyproxy come from Debian; install only what is missing, refresh the package lists
# only when the install fails without them.
missing=()
case ",$TARGETS," in *,squid,*) [ -x /usr/sbin/squid ] || missing+=(squid) ;; esac
case ",$TARGETS," in *,tinyproxy,*) [ -x /usr/bin/tinyproxy ] || missing+=(tinyproxy) ;; esac
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]} from Debian"
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null; then
    apt-get update -q >/dev/null
    apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null \
      || die "installing ${missing[*]} with apt-get failed"
  fi
fi

# 5,000 idle tunnels cost the harness and the proxy two descriptors each.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
[ "$(ulimit -n)" -ge 16384 ] || die "raising the open-files limit: only $(ulimit -n) allowed (need 16384 for 5,000 tunnels)"

modules=bench
PROXY_JAR_GIVEN=${PROXY_JAR:-}
case ",$TARGETS," in
  *,agent-sandbox,*)
    if [ -z "$PROXY_JAR_GIVEN" ]; then
      [ -d "$ROOT/proxy" ] || die "benchmarking agent-sandbox: module proxy/ is not in this checkout (merge main, or pass --targets direct,squid,tinyproxy)"
      modules=bench,proxy
    fi ;;
esac
log "building $modules"
(cd "$ROOT" && ./mvnw -B -q -pl "$modules" -am package -DskipTests) || die "building $modules failed"
# The build itself loads the machine; a published run starts quiet (load average under 1), so wait
# for the one-minute average to fall back under 1, at most BENCH_QUIET_WAIT seconds (default 180).
quiet_wait=${BENCH_QUIET_WAIT:-180}
for _ in $(seq 1 "$quiet_wait"); do
  awk '{ exit !($1 < 1) }' /proc/loadavg && break
  sleep 1
done
awk '{ exit !($1 < 1) }' /proc/loadavg ||
  log "load average still $(cut -d' ' -f1 /proc/loadavg) after ${quiet_wait} s; measuring anyway (the table says so)"
PROXY_JAR=${PROXY_JAR_GIVEN:-$ROOT/proxy/target/agent-sandbox-proxy.jar}
proxy_args=(--proxy-label "${PROXY_LABEL:-agent-sandbox}")
case ",$TARGETS," in
  *,agent-sandbox,*)
    [ -f "$PROXY_JAR" ] || die "benchmarking agent-sandbox: $PROXY_JAR does not exist"
    proxy_args+=(--proxy-jar "$PROXY_JAR") ;;
esac

# Configs and logs go to tmpfs when there is one: tinyproxy fsyncs its log after every line, and
# the comparison is about the proxies, not about this machine's disk.
base=/tmp
[ -d /dev/shm ] && [ -w /dev/shm ] && base=/dev/shm
WORK=$(mktemp -d "$base/agent-sandbox-bench.XXXXXX")
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
  # The harness stops what it started; this catches what a killed harness left behind. Only PIDs
  # it recorded, and only while they still run one of the proxies (a PID may have been reused).
  if [ -f "$WORK/pids" ]; then
    while read -r pid; do
      if grep -qaE 'squid|tinyproxy|agent-sandbox-proxy' "/proc/$pid/cmdline" 2>/dev/null; then
        stop_pid "$pid"
      fi
    done <"$WORK/pids"
  fi
  if [ "$status" = 0 ]; then rm -rf "$WORK"; else log "configs and logs kept in $WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

machine() {
  echo "- when: $(date -u '+%Y-%m-%d %H:%M UTC'); load average before the run: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "- CPU: $(nproc) × $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'); RAM: $(free -m | awk '/^Mem:/{print $2}') MiB; kernel $(uname -r)"
  echo "- JDK: $("$JAVA" -version 2>&1 | head -1)"
  [ -x /usr/sbin/squid ] && echo "- squid: $(/usr/sbin/squid -v | head -1)"
  [ -x /usr/bin/tinyproxy ] && echo "- tinyproxy: $(/usr/bin/tinyproxy -v 2>&1 | head -1)"
  case ",$TARGETS," in *,agent-sandbox,*) echo "- agent-sandbox proxy: $PROXY_JAR ($(sha256sum "$PROXY_JAR" | cut -c1-12)), JVM flags: $PROXY_JAVA_OPTS" ;; esac
  echo "- mode: ${QUICK[*]:-full}; open-files limit $(ulimit -n)"
}
machine | tee "$WORK/machine.md" >&2

limit=900
[ ${#QUICK[@]} -gt 0 ] && limit=300
# In the background so the trap can stop it; timeout bounds the whole run.
timeout --signal=TERM --kill-after=20 "$limit" \
  "$JAVA" -Xmx1g -jar "$ROOT/bench/target/agent-sandbox-bench.jar" \
  --work "$WORK" --targets "$TARGETS" --clk-tck "$(getconf CLK_TCK)" \
  --proxy-java "$JAVA" --proxy-java-opts "$PROXY_JAVA_OPTS" "${proxy_args[@]}" \
  --out "$WORK/table.md" "${QUICK[@]}" &
HARNESS=$!
status=0
wait "$HARNESS" || status=$?
HARNESS=
if [ -n "$OUT" ] && [ -f "$WORK/table.md" ]; then
  { cat "$WORK/machine.md"; echo; cat "$WORK/table.md"; } >"$OUT"
  log "wrote $OUT"
fi
exit "$status"
