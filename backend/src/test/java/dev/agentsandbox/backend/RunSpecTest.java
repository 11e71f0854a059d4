package dev.agentsandbox.backend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.config.Resources;
import dev.agentsandbox.policy.config.RunEgress;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class RunSpecTest {
  private static final RunEgress EGRESS =
      new RunEgress(
          AllowList.parse(List.of("*.vendor.com", "db.example.com:5432")),
          Optional.of(AllowList.parse(List.of("api.vendor.com"))),
          List.of(),
          Map.of());

  static RunSpec spec(String runId, String agent) {
    return new RunSpec(
        runId,
        agent,
        "agent-sandbox/workload:latest",
        List.of("true"),
        Map.of(),
        EGRESS,
        new Resources(1, 256, 64),
        Duration.ofMinutes(5),
        Instant.ofEpochSecond(1_800_000_000L),
        false);
  }

  @Test
  void labelsCarryRunAgentManagerAndExpiry() {
    assertThat(spec("r1", "helper").labels())
        .containsEntry(Labels.RUN_ID, "r1")
        .containsEntry(Labels.AGENT, "helper")
        .containsEntry(Labels.MANAGED_BY, "agent-sandbox")
        .containsEntry(Labels.EXPIRES_AT, "1800000000");
  }

  @Test
  void runIdsThatCouldEscapeANameOrLabelAreRefused() {
    for (String bad : List.of("", "R1", "a-b", "a/b", "x".repeat(33), "a b")) {
      assertThatThrownBy(() -> spec(bad, "helper"))
          .as("run id %s", bad)
          .isInstanceOf(IllegalArgumentException.class);
    }
  }

  @Test
  void agentNamesMustBeDnsLabels() {
    for (String bad : List.of("", "Helper", "-x", "x-", "a.b", "a_b")) {
      assertThatThrownBy(() -> spec("r1", bad))
          .as("agent %s", bad)
          .isInstanceOf(IllegalArgumentException.class);
    }
  }

  @Test
  void effectivePolicyIsNarrowedByTheInstancePolicy() {
    assertThat(EGRESS.effective().asStrings()).containsExactly("api.vendor.com");
    RunEgress unrestricted = new RunEgress(EGRESS.allow(), Optional.empty(), List.of(), Map.of());
    assertThat(unrestricted.effective()).isEqualTo(EGRESS.allow());
  }

  @Test
  void missingOrGarbledExpiryCountsAsExpired() {
    assertThat(Labels.expiresAt(Map.of())).isEqualTo(Instant.MIN);
    assertThat(Labels.expiresAt(Map.of(Labels.EXPIRES_AT, "soon"))).isEqualTo(Instant.MIN);
    assertThat(Labels.expiresAt(Map.of(Labels.EXPIRES_AT, "42")))
        .isEqualTo(Instant.ofEpochSecond(42));
  }
}
