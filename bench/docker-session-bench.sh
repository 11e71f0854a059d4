#!/usr/bin/env bash
# A session's step round trip on the Docker backend, per runtime the daemon has (runc, runsc):
# OPENS cold session opens, then STEPS `echo hi` steps, the same number of `docker exec CID echo hi`
# from the Docker CLI into the same workload container (the baseline), and FILES puts then gets of
# 1 MiB; p50/p99, with the load average.
#   bench/docker-session-bench.sh [STEPS [FILES [OPENS]]]   (default 100, 20 and 5; needs the
#   Docker daemon and images/build.sh's agent-sandbox/workload:dev and agent-sandbox/proxy:dev)
# Prints one JSON line per runtime; the numbers go to docs/benchmarks.md by hand, as a measurement.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/jdk.sh
asb_find_jdk jdk
./mvnw -B -q -ntp -pl backend-docker -am package -DskipTests \
  dependency:build-classpath -Dmdep.outputFile=target/bench-classpath.txt -Dmdep.includeScope=test
CP="$PWD/backend-docker/target/test-classes:$PWD/backend-docker/target/classes:$(cat backend-docker/target/bench-classpath.txt)"
cd backend-docker
exec "$JAVA_HOME/bin/java" -cp "$CP" dev.agentsandbox.backend.docker.DockerSessionBench \
  "${1:-100}" "${2:-20}" "${3:-5}"
