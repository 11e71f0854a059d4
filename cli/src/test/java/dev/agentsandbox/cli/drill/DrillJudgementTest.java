package dev.agentsandbox.cli.drill;

import static dev.agentsandbox.cli.drill.DrillFixtures.METADATA_ROWS;
import static dev.agentsandbox.cli.drill.DrillFixtures.SETUP;
import static dev.agentsandbox.cli.drill.DrillFixtures.UNLISTED_DENIED;
import static dev.agentsandbox.cli.drill.DrillFixtures.UNLISTED_HELD;
import static dev.agentsandbox.cli.drill.DrillFixtures.UNLISTED_ROWS;
import static dev.agentsandbox.cli.drill.DrillFixtures.ran;
import static dev.agentsandbox.cli.drill.DrillFixtures.row;
import static dev.agentsandbox.cli.drill.DrillFixtures.transcript;
import static dev.agentsandbox.cli.drill.DrillFixtures.withTeardown;
import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.cli.drill.DrillFixtures.Case;
import dev.agentsandbox.cli.drill.DrillObservation.Decision;
import dev.agentsandbox.cli.drill.DrillObservation.Refusal;
import dev.agentsandbox.cli.drill.DrillTranscript.StepResult;
import dev.agentsandbox.policy.event.Refused;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The drill's judgement, without a server: for every step, what a held layer looks like (the
 * outputs are those seen under runc and runsc) and, row by row, an observation in which one layer
 * did NOT hold — a connection that succeeded, a decision that allowed, a missing audit row, a cap
 * that did not bite — which must fail the step, the drill's verdict and its exit code.
 */
class DrillJudgementTest {
  static Stream<Arguments> cases() {
    Map<String, Case> rows = new LinkedHashMap<>();
    rows.put(
        "unlisted host: refused by proxy, audited, torn down",
        new Case(
            "unlisted-host-through-proxy",
            ran(UNLISTED_HELD, 0, UNLISTED_DENIED, UNLISTED_ROWS),
            true,
            null));
    rows.put(
        "unlisted host: the HTTPS request got an answer",
        new Case(
            "unlisted-host-through-proxy",
            ran(
                UNLISTED_HELD
                    .replace("https-code=000", "https-code=200")
                    .replace("https-exit=56", "https-exit=0"),
                0,
                UNLISTED_DENIED,
                UNLISTED_ROWS),
            false,
            "workload"));
    rows.put(
        "unlisted host: the proxy allowed one port",
        new Case(
            "unlisted-host-through-proxy",
            ran(
                UNLISTED_HELD,
                0,
                List.of(
                    new Decision("deny", "unlisted.test", 443, "not-allowed"),
                    new Decision("allow", "unlisted.test", 80, "allowed")),
                UNLISTED_ROWS),
            false,
            "proxy"));
    rows.put(
        "unlisted host: no deny row in the audit log",
        new Case(
            "unlisted-host-through-proxy",
            ran(UNLISTED_HELD, 0, UNLISTED_DENIED, withTeardown()),
            false,
            "audit"));
    rows.put(
        "unlisted host: the run was not torn down",
        new Case(
            "unlisted-host-through-proxy",
            ran(UNLISTED_HELD, 0, UNLISTED_DENIED, UNLISTED_ROWS.subList(0, 2)),
            false,
            "cleanup"));
    rows.put(
        "direct connect: no route (curl 7)",
        new Case(
            "direct-connect-without-proxy",
            ran("drill: code=000\ndrill: exit=7\n", 0, List.of(), withTeardown()),
            true,
            null));
    rows.put(
        "direct connect: the connection succeeded",
        new Case(
            "direct-connect-without-proxy",
            ran("drill: code=200\ndrill: exit=0\n", 0, List.of(), withTeardown()),
            false,
            "network"));
    rows.put(
        "direct connect: connected, then the peer reset (curl 56 is a connection)",
        new Case(
            "direct-connect-without-proxy",
            ran("drill: code=000\ndrill: exit=56\n", 0, List.of(), withTeardown()),
            false,
            "network"));
    rows.put(
        "direct connect: the script printed nothing (fails closed)",
        new Case(
            "direct-connect-without-proxy",
            ran("", 127, List.of(), withTeardown()),
            false,
            "network"));
    rows.put(
        "overridden proxy variables: timed out (curl 28)",
        new Case(
            "proxy-variables-overridden",
            ran("drill: code=000\ndrill: exit=28\n", 0, List.of(), withTeardown()),
            true,
            null));
    rows.put(
        "overridden proxy variables: the agent's proxy answered",
        new Case(
            "proxy-variables-overridden",
            ran("drill: code=200\ndrill: exit=0\n", 0, List.of(), withTeardown()),
            false,
            "network"));
    rows.put(
        "proxy variables through the API: 400 env_refused, audited",
        new Case(
            "proxy-variables-through-api",
            new DrillObservation(
                null,
                null,
                null,
                null,
                "",
                List.of(),
                List.of(
                    row(
                        20,
                        null,
                        new Refused(
                            "env_refused",
                            "running agent drill: the environment is refused",
                            List.of(),
                            List.of("HTTPS_PROXY"),
                            List.of("echo", "drill-d1-env"),
                            List.of(),
                            List.of()))),
                new Refusal(400, "env_refused")),
            true,
            null));
    rows.put(
        "proxy variables through the API: accepted and run",
        new Case(
            "proxy-variables-through-api",
            ran("drill-d1-env\n", 0, List.of(), withTeardown()),
            false,
            "api"));
    rows.put(
        "metadata: unreachable directly, ip-literal through the proxy",
        new Case(
            "metadata-address",
            ran(
                "drill: direct-code=000\ndrill: direct-exit=7\ndrill: proxied-code=403\n"
                    + "drill: proxied-exit=0\n",
                0,
                List.of(new Decision("deny", "169.254.169.254", 80, "ip-literal")),
                METADATA_ROWS),
            true,
            null));
    rows.put(
        "metadata: the direct request got the metadata",
        new Case(
            "metadata-address",
            ran(
                "drill: direct-code=200\ndrill: direct-exit=0\ndrill: proxied-code=403\n"
                    + "drill: proxied-exit=0\n",
                0,
                List.of(new Decision("deny", "169.254.169.254", 80, "ip-literal")),
                METADATA_ROWS),
            false,
            "network"));
    rows.put(
        "host and gateway: nothing connects",
        new Case(
            "host-and-gateway",
            ran(
                "drill: gateway=172.27.0.1\ndrill: target=198.18.5.2:9090 exit=7\n"
                    + "drill: target=172.27.0.1:22 exit=28\ndrill: done=yes\n",
                0,
                List.of(),
                withTeardown()),
            true,
            null));
    rows.put(
        "host and gateway: the host's service answered",
        new Case(
            "host-and-gateway",
            ran(
                "drill: gateway=172.27.0.1\ndrill: target=198.18.5.2:9090 exit=0\n"
                    + "drill: target=172.27.0.1:22 exit=7\ndrill: done=yes\n",
                0,
                List.of(),
                withTeardown()),
            false,
            "network"));
    rows.put(
        "host and gateway: the given host target was never tried",
        new Case(
            "host-and-gateway",
            ran(
                "drill: gateway=172.27.0.1\ndrill: target=172.27.0.1:22 exit=7\n"
                    + "drill: done=yes\n",
                0,
                List.of(),
                withTeardown()),
            false,
            "network"));
    rows.put(
        "dns: neither lookup answers",
        new Case(
            "dns",
            ran("drill: resolver-exit=1\ndrill: direct-exit=1\n", 0, List.of(), withTeardown()),
            true,
            null));
    rows.put(
        "dns: the sandbox's resolver answered",
        new Case(
            "dns",
            ran(
                "drill: answer=unlisted.test\ndrill: resolver-exit=0\ndrill: direct-exit=1\n",
                0,
                List.of(),
                withTeardown()),
            false,
            "network"));
    rows.putAll(SandboxCases.rows());
    return rows.entrySet().stream().map(e -> Arguments.of(e.getKey(), e.getValue()));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("cases")
  void eachLayerIsJudgedFromWhatWasSeen(String name, Case c) {
    DrillStep step = DrillSteps.byName(SETUP, c.step());
    StepResult result = StepResult.of(step, c.seen());
    assertThat(result.verdict())
        .as(result.checks().toString())
        .isEqualTo(c.held() ? "held" : "failed");
    if (!c.held()) {
      assertThat(result.checks())
          .filteredOn(check -> !check.held())
          .extracting(DrillCheck::layer)
          .as(result.checks().toString())
          .contains(c.failingLayer());
      DrillTranscript transcript = transcript(List.of(result));
      assertThat(transcript.verdict()).isEqualTo("failed");
      assertThat(Drill.exitCode(transcript.verdict())).isEqualTo(Drill.LAYER_FAILED);
    }
  }

  @Test
  void aDrillWhoseStepsAllHeldExitsZero() {
    Map<String, StepResult> firstHeld = new LinkedHashMap<>();
    cases()
        .map(a -> (Case) a.get()[1])
        .filter(Case::held)
        .forEach(
            c ->
                firstHeld.putIfAbsent(
                    c.step(), StepResult.of(DrillSteps.byName(SETUP, c.step()), c.seen())));
    List<StepResult> results =
        DrillSteps.all(SETUP).stream().map(s -> firstHeld.get(s.name())).toList();
    DrillTranscript transcript = transcript(results);
    assertThat(transcript.verdict()).isEqualTo("held");
    assertThat(Drill.exitCode(transcript.verdict())).isZero();
    assertThat(DrillVerifier.judgementProblems(transcript))
        .as("a transcript with one held result per step name verifies its own judgement")
        .isEmpty();
  }
}
