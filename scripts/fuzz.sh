#!/usr/bin/env bash
# Fuzzes each Jazzer target (the *FuzzTest classes) for a bounded time, one at a time (Jazzer fuzzes
# one target per JVM). Without JAZZER_FUZZ the same tests run in every `mvnw verify` as regression
# tests over their kept inputs; this script is what turns the fuzzer on. A crash fails the run, and
# Jazzer writes the input that caused it next to the seeds
# (src/test/resources/<package>/<Class>Inputs/<method>/), where it stays as a regression test once
# committed. The working corpus goes to <module>/.cifuzz-corpus/ (not kept).
#
# Usage: scripts/fuzz.sh [seconds per target]   (default: $AGENT_SANDBOX_FUZZ_SECONDS or 20)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/jdk.sh
asb_find_jdk jdk

seconds=${1:-${AGENT_SANDBOX_FUZZ_SECONDS:-20}}
case "$seconds" in '' | *[!0-9]*) echo "fuzz: seconds must be a whole number, got '$seconds'" >&2; exit 2 ;; esac

targets=(
  "policy dev.agentsandbox.policy.fuzz.GrammarFuzzTest#allowEntryParsesBackFromItsPrintedForm"
  "policy dev.agentsandbox.policy.fuzz.GrammarFuzzTest#canonicalHostNamesAreFixedPoints"
  "policy dev.agentsandbox.policy.fuzz.GrammarFuzzTest#ipLiteralsFormatToTextThatParsesToTheSameBytes"
  "policy dev.agentsandbox.policy.fuzz.ConfigReaderFuzzTest#aDocumentReadsOrIsRefusedAndRoundTrips"
)
# The proxy's two targets (ProxyFuzzTest) run over their kept inputs in every `mvnw verify`, but
# not in fuzzing mode yet: their @BeforeAll installs Jazzer's loopback-only network hook before the
# agent is attached, which fails ("Failed to set sanitizer variable").

# Compile once; each target then runs through the test phase alone (nothing recompiled, no other test).
./mvnw -B -ntp -q -o -pl policy,proxy -am test-compile -Dspotless.check.skip=true

failed=()
for target in "${targets[@]}"; do
  module=${target%% *}
  test=${target#* }
  echo "fuzz: $test for ${seconds}s"
  start=$(date +%s)
  # The test phase, not surefire:test alone: a module that depends on another of ours (proxy on
  # policy) resolves it from the reactor only when the build runs through the lifecycle.
  if ! JAZZER_FUZZ=1 JAZZER_MAX_DURATION="${seconds}s" ./mvnw -B -ntp -q -o -pl "$module" -am \
    test -Dtest="$test" -Dsurefire.failIfNoSpecifiedTests=false -Dspotless.check.skip=true \
    -Djazzer.max_duration="${seconds}s"; then
    failed+=("$test")
  fi
  echo "fuzz: $test took $(($(date +%s) - start))s in all"
done

if [ "${#failed[@]}" -gt 0 ]; then
  echo "fuzz: findings in ${failed[*]} (the inputs are under src/test/resources/.../*Inputs/; commit them)" >&2
  exit 1
fi
echo "fuzz: ${#targets[@]} targets, ${seconds}s each, no finding"
