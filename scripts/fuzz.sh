#!/usr/bin/env bash
# Fuzzes each Jazzer target (the *FuzzTest classes) for a bounded time, one at a time (Jazzer fuzzes
# one target per JVM). Without JAZZER_FUZZ the same tests run in every `mvnw verify` as regression
# tests over their kept inputs; this script is what turns the fuzzer on. A crash fails the run, and
# Jazzer writes the input that caused it next to the seeds
# (src/test/resources/<package>/<Class>Inputs/<method>/), where it stays as a regression test once
# committed. The working corpus goes to <module>/.cifuzz-corpus/ (not kept).
#
# Usage: scripts/fuzz.sh [seconds per target [module]]   (default: $AGENT_SANDBOX_FUZZ_SECONDS or 20;
#        a module, policy or proxy, fuzzes only its targets)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/jdk.sh
asb_find_jdk jdk

seconds=${1:-${AGENT_SANDBOX_FUZZ_SECONDS:-20}}
case "$seconds" in '' | *[!0-9]*) echo "fuzz: seconds must be a whole number, got '$seconds'" >&2; exit 2 ;; esac
only=${2:-}
case "$only" in '' | policy | proxy) ;; *) echo "fuzz: the module must be policy or proxy, got '$only'" >&2; exit 2 ;; esac

targets=(
  "policy dev.agentsandbox.policy.fuzz.GrammarFuzzTest#allowEntryParsesBackFromItsPrintedForm"
  "policy dev.agentsandbox.policy.fuzz.GrammarFuzzTest#canonicalHostNamesAreFixedPoints"
  "policy dev.agentsandbox.policy.fuzz.GrammarFuzzTest#ipLiteralsFormatToTextThatParsesToTheSameBytes"
  "policy dev.agentsandbox.policy.fuzz.ConfigReaderFuzzTest#aDocumentReadsOrIsRefusedAndRoundTrips"
  "proxy dev.agentsandbox.proxy.RequestHeadFuzzTest#aForwardedHeadIsDecidedAndClean"
  "proxy dev.agentsandbox.proxy.ProxyFuzzTest#noRequestReachesARefusedHost"
  "proxy dev.agentsandbox.proxy.ProxyFuzzTest#theSniGuardPassesOnlyAHelloNamingTheTarget"
)
# ProxyFuzzTest#noRequestReachesARefusedHost sets Jazzer's loopback-only network hook at the start
# of each input (Jazzer's agent is attached only after @BeforeAll), so while fuzzing a connection
# anywhere off loopback is itself a finding.

# Compile once; each target then runs through the test phase alone (nothing recompiled, no other test).
./mvnw -B -ntp -q -o -pl policy,proxy -am test-compile -Dspotless.check.skip=true

failed=()
for target in "${targets[@]}"; do
  module=${target%% *}
  test=${target#* }
  if [ -n "$only" ] && [ "$module" != "$only" ]; then
    continue
  fi
  echo "fuzz: $test for ${seconds}s"
  start=$(date +%s)
  # The test phase, not surefire:test alone: a module that depends on another of ours (proxy on
  # policy) resolves it from the reactor only when the build runs through the lifecycle.
  # The fuzzer's own output goes to a log per target; its closing "Done N runs in S second(s)" line
  # gives the inputs executed, and on a finding the log's end is shown.
  log="$module/target/fuzz-${test##*#}.log"
  mkdir -p "$module/target"
  if ! JAZZER_FUZZ=1 JAZZER_MAX_DURATION="${seconds}s" ./mvnw -B -ntp -o -pl "$module" -am \
    test -Dtest="$test" -Dsurefire.failIfNoSpecifiedTests=false -Dspotless.check.skip=true \
    -Djazzer.max_duration="${seconds}s" >"$log" 2>&1; then
    tail -n 60 "$log" >&2
    failed+=("$test")
  fi
  runs=$(grep -Eo 'Done [0-9]+ runs in [0-9]+ second' "$log" | tail -n 1 | grep -Eo '[0-9]+' | head -n 1 || true)
  echo "fuzz: $test took $(($(date +%s) - start))s in all; executed ${runs:-no} inputs (log: $log)"
done

if [ "${#failed[@]}" -gt 0 ]; then
  echo "fuzz: findings in ${failed[*]} (the inputs are under src/test/resources/.../*Inputs/; commit them)" >&2
  exit 1
fi
echo "fuzz: ${only:-every module}: ${seconds}s per target, no finding"
