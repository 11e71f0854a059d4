package dev.agentsandbox.mcp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.agentsandbox.policy.net.Reason;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** What a model reads of a result: refusals with their reasons, tails, errors with the code. */
class ReportsTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private final Reports reports = new Reports(JSON);

  private static JsonNode json(String text) throws Exception {
    return JSON.readTree(text);
  }

  @Test
  void aRefusedHostIsReportedWithItsReasonAndThatRetryingWillNotHelp() throws Exception {
    Reports.Answer answer =
        reports.run(
            json(
                """
                {"run_id": "r1", "kind": "run", "agent": "helper", "status": "exited",
                 "end": "exit", "exit_status": 7, "output_tail": "curl: (56) 403\\n",
                 "egress": [
                   {"decision": "allow", "host": "pypi.org", "port": 443, "reason": "allowed"},
                   {"decision": "deny", "host": "evil.test", "port": 443, "reason": "not-allowed"},
                   {"decision": "deny", "host": "flaky.test", "port": 443, "reason": "dns-failure"}
                 ]}
                """));
    assertThat(answer.text())
        .contains("run r1 of agent helper ended: exit, exit status 7")
        .contains("curl: (56) 403")
        .contains("egress refused (2 connections):")
        .contains(
            "- evil.test:443 refused (not-allowed): the host is not on the agent's egress"
                + " allow-list")
        .contains("Retrying will not help.")
        .doesNotContain("pypi.org");
    JsonNode refused = answer.structured().path("egress_refused");
    assertThat(refused).hasSize(2);
    assertThat(refused.get(0).path("retry_may_help").asBoolean()).isFalse();
    assertThat(refused.get(1).path("reason").asText()).isEqualTo("dns-failure");
    assertThat(refused.get(1).path("retry_may_help").asBoolean()).isTrue();
  }

  @Test
  void aStepsTailsAreCutFromTheFrontSayingHowMuchWasLeftOut() throws Exception {
    String flood = "x".repeat(Reports.TAIL_CHARS + 10) + "LAST";
    Reports.Answer answer =
        reports.step(
            JSON.valueToTree(
                Map.of(
                    "step",
                    2,
                    "status",
                    "ended",
                    "end",
                    "exit",
                    "exit_status",
                    0,
                    "stdout",
                    flood,
                    "egress",
                    List.of())));
    String stdout = answer.structured().path("stdout").asText();
    assertThat(stdout).startsWith("[… 14 earlier characters left out]\n").endsWith("LAST");
    assertThat(answer.text()).contains("step 2 ended: exit, exit status 0");
  }

  @Test
  void anApiRefusalKeepsItsCodeStatusAndBody() throws Exception {
    SandboxApiException refused =
        SandboxApiException.of(
            "run a command",
            404,
            "{\"error\": \"run_not_found\", \"message\": \"find run: no run has this id\"}"
                .getBytes(java.nio.charset.StandardCharsets.UTF_8),
            JSON);
    Reports.Answer answer = reports.error(refused);
    assertThat(answer.text()).isEqualTo("run_not_found: find run: no run has this id");
    assertThat(answer.structured().path("status").asInt()).isEqualTo(404);
    SandboxApiException proxy =
        SandboxApiException.of(
            "run a command",
            502,
            "<html>bad gateway</html>".getBytes(java.nio.charset.StandardCharsets.UTF_8),
            JSON);
    assertThat(proxy.code()).isEqualTo("http_502");
    assertThat(proxy.getMessage()).isEqualTo("run a command: HTTP 502 <html>bad gateway</html>");
  }

  @ParameterizedTest
  @EnumSource(Reason.class)
  void everyReasonOfTheProxyHasAnExplanation(Reason reason) {
    assertThat(EgressRefusals.explanation(reason)).isNotBlank().endsWith(".");
  }

  @Test
  void aRunIdAModelWroteIsCheckedBeforeAnyPathIsBuiltFromIt() {
    SandboxApi api = SandboxApi.connect(java.net.URI.create("http://127.0.0.1:9"), "t");
    for (String bad : List.of("../../token", "ABC", "a/b", "", "a".repeat(33), "r1?x=1")) {
      assertThatThrownBy(() -> api.close(bad))
          .as(bad)
          .isInstanceOfSatisfying(
              SandboxApiException.class, e -> assertThat(e.code()).isEqualTo("invalid_arguments"));
    }
  }

  @Test
  void argumentsOfTheWrongShapeAreNamed() {
    Args args =
        new Args("exec", Map.of("command", List.of("ls", 3), "run_id", 12, "timeout_seconds", 1.5));
    assertThatThrownBy(() -> args.strings("command"))
        .hasMessage("exec: command must hold only strings");
    assertThatThrownBy(() -> args.string("run_id")).hasMessage("exec: run_id must be a string");
    assertThatThrownBy(() -> args.optionalWhole("timeout_seconds"))
        .hasMessage("exec: timeout_seconds must be a whole number");
    assertThatThrownBy(() -> args.string("cwd")).hasMessage("exec: cwd is required (a string)");
  }
}
