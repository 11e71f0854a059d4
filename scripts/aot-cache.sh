#!/usr/bin/env bash
# Trains the JDK's ahead-of-time class cache (JEP 483/514, JDK 25 or newer) for the packaged jar:
# runs `agent-sandbox serve` once on a throw-away store, sends it the requests a control plane
# answers first (configure an agent, plan, read), stops it, and keeps the cache the JVM writes at
# exit as cli/target/agent-sandbox.aot. bin/agent-sandbox then starts with it (classes loaded and
# linked from the cache instead of the jar): what `serve` takes to be ready is in docs/benchmarks.md.
# The cache fits only this jar and this JDK: bin/agent-sandbox uses it only when it is newer than
# the jar and was trained with the same JAVA_HOME (recorded next to it); run this again after a
# build. Needs nothing but the jar and loopback (the Docker daemon is not needed: a plan creates
# nothing). Usage: scripts/aot-cache.sh
set -euo pipefail
root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"
# shellcheck source=lib/jdk.sh
. "$root/scripts/lib/jdk.sh"
asb_find_jdk runtime
jar="$root/cli/target/agent-sandbox.jar"
aot="$root/cli/target/agent-sandbox.aot"
[ -f "$jar" ] || { echo "aot-cache: $jar is missing (build it first)" >&2; exit 1; }
major=$(asb_java_major "$JAVA_HOME/bin/java")
if [ "${major:-0}" -lt 25 ]; then
  echo "aot-cache: $JAVA_HOME is Java $major; the AOT cache needs 25 or newer: skipped" >&2
  rm -f "$aot" "$aot.jdk"
  exit 0
fi

work=$(mktemp -d /tmp/agent-sandbox-aot.XXXXXX)
pid=
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -9 "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
rm -f "$aot" "$aot.jdk"
# The same JVM options as bin/agent-sandbox: a cache trained with others is refused at start.
"$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED -XX:TrimNativeHeapInterval=2000 -XX:AOTCacheOutput="$work/cache.aot" \
  -jar "$jar" serve --listen 127.0.0.1:0 --db "jdbc:sqlite:$work/store.db" --data-dir "$work" \
  --instance-id aot-training >"$work/serve.log" 2>&1 &
pid=$!
url=
for _ in $(seq 1 600); do
  url=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$work/serve.log" | head -n 1)
  [ -n "$url" ] && break
  kill -0 "$pid" 2>/dev/null || { cat "$work/serve.log" >&2; exit 1; }
  sleep 0.1
done
[ -n "$url" ] || { echo "aot-cache: serve did not start within 60 s" >&2; cat "$work/serve.log" >&2; exit 1; }
token=$(cat "$work/admin-token")
api() { curl -sS -o /dev/null --max-time 60 -H "Authorization: Bearer $token" "$@"; }
base="$url/api/admin/platform/agent-sandbox"
api -X PUT "$base" -H 'Content-Type: application/json' \
  -d '{"enabled": true, "backend": "docker", "reason": "aot training", "agents": {"training": {"allow": ["example.com"]}}}'
for _ in 1 2 3 4 5; do
  api -X POST "$base/plan" -H 'Content-Type: application/json' -d '{"agent": "training", "command": ["true"]}'
  api "$base"
  api "$base/runs"
  api "$url/readyz"
  api "$url/metrics"
done
kill "$pid"
for _ in $(seq 1 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$pid" 2>/dev/null; then echo "aot-cache: serve did not stop within 60 s" >&2; exit 1; fi
wait "$pid" || true
pid=
[ -s "$work/cache.aot" ] || { echo "aot-cache: the JVM wrote no cache" >&2; tail -20 "$work/serve.log" >&2; exit 1; }
mv "$work/cache.aot" "$aot"
printf '%s\n' "$JAVA_HOME" >"$aot.jdk"
echo "aot-cache: wrote $aot ($(du -h "$aot" | cut -f1)) for $JAVA_HOME" >&2
