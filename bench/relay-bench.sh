#!/usr/bin/env bash
# Relays one loopback stream three ways with Netty's event loop (a ByteBuf relay on epoll, epoll's
# deprecated spliceTo, a ByteBuf relay on NIO) beside the direct stream, alternating the modes in
# every round; prints MB/s and the relay thread's CPU seconds per GB, with medians. See
# docs/benchmarks.md ("Relay: lean vs splice"). Sends traffic only to 127.0.0.1.
#
# Usage: bench/relay-bench.sh [ROUNDS [MIB_PER_MEASUREMENT [MODES]]]   (default: 5 2048 all)
#   MODES  comma-separated subset of direct,epoll-bytebuf,epoll-splice,nio-bytebuf
# Environment:
#   RELAY_JAVA_OPTS  JVM flags (default: the proxy image's heap cap and allocator setting)
#   JAVA_HOME        a JDK >= 21 (otherwise one is looked for under /usr/lib/jvm)
# Needs Netty's jars in ~/.m2 at the project's version, including the epoll transport's native
# library (netty-transport-native-epoll, classifier linux-x86_64); fetch them with
#   ./mvnw dependency:get -Dartifact=io.netty:netty-transport-native-epoll:VERSION:jar:linux-x86_64
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
die() { echo "relay-bench: $*" >&2; exit 1; }
case "${1:-}" in -h|--help) sed -n '2,15p' "$0"; exit 0 ;; esac

. "$ROOT/scripts/lib/jdk.sh"
asb_find_jdk jdk || die "looking for a JDK >= 21: none found (set JAVA_HOME)"
version=$(sed -n 's:.*<netty.version>\(.*\)</netty.version>.*:\1:p' "$ROOT/pom.xml" | head -1)
[ -n "$version" ] || die "reading netty.version from pom.xml: not found"
repo=${MAVEN_REPO:-$HOME/.m2/repository}/io/netty
cp=
for a in netty-common netty-buffer netty-resolver netty-transport netty-transport-native-unix-common \
         netty-transport-classes-epoll netty-transport-native-epoll; do
  jar=$repo/$a/$version/$a-$version.jar
  [ "$a" = netty-transport-native-epoll ] && jar=$repo/$a/$version/$a-$version-linux-x86_64.jar
  [ -f "$jar" ] || die "missing $jar (see --help for how to fetch it)"
  cp=${cp:+$cp:}$jar
done
: "${RELAY_JAVA_OPTS:=-XX:+UseSerialGC -XX:MaxRAM=256m -XX:MaxRAMPercentage=70 -Dio.netty.allocator.lowMemory=false}"
# shellcheck disable=SC2086
exec "$JAVA_HOME/bin/java" $RELAY_JAVA_OPTS --enable-native-access=ALL-UNNAMED -cp "$cp" "$ROOT/bench/splice/RelayBench.java" "$@"
