#!/usr/bin/env bash
# A session's step round trip on the microVM backend (software emulation here, qemu-tcg): one VM,
# then STEPS `echo hi` steps and FILES puts then gets of 1 MiB, p50/p99, with the load average.
#   bench/microvm-session-bench.sh [STEPS [FILES]]   (default 100 and 20; needs root, QEMU, the
#   guest kernel from scripts/install-host.sh and images/build.sh's agent-sandbox/workload:dev)
# Prints one JSON line; the numbers go to docs/benchmarks.md by hand, as a measurement.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/jdk.sh
asb_find_jdk jdk
./mvnw -B -q -ntp -pl backend-microvm -am package -DskipTests \
  dependency:build-classpath -Dmdep.outputFile=target/bench-classpath.txt -Dmdep.includeScope=test
CP="$PWD/backend-microvm/target/test-classes:$PWD/backend-microvm/target/classes:$(cat backend-microvm/target/bench-classpath.txt)"
cd backend-microvm
exec "$JAVA_HOME/bin/java" -cp "$CP" dev.agentsandbox.backend.microvm.SessionStepBench "${1:-100}" "${2:-20}"
