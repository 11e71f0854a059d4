package dev.agentsandbox.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.agentsandbox.policy.event.DecisionRecord;
import dev.agentsandbox.policy.net.Reason;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import org.junit.jupiter.api.Test;

/** The decision line schema other parts (the control plane, the audit log) read. */
class JsonLinesDecisionWriterTest {
  @Test
  void aDecisionIsOneJsonLineWithTheDocumentedSnakeCaseFields() throws Exception {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    JsonLinesDecisionWriter writer = new JsonLinesDecisionWriter(out, false);
    writer.onDecision(
        new DecisionRecord(
            Instant.parse("2026-11-29T15:00:00Z"),
            "run-1",
            "10.0.0.5:51000",
            "CONNECT",
            "api.vendor.com",
            443,
            true,
            Reason.ALLOWED,
            "93.184.215.14",
            517,
            4096,
            120,
            true,
            "client-closed",
            null));
    writer.onDecision(
        new DecisionRecord(
            Instant.parse("2026-11-29T15:00:01Z"),
            "run-1",
            "10.0.0.5:51001",
            "GET",
            "evil.example",
            80,
            false,
            Reason.NOT_ALLOWED,
            null,
            0,
            0,
            0,
            false,
            null,
            "the host is not on the allow-list"));
    String[] lines = out.toString(StandardCharsets.UTF_8).split("\n");
    assertThat(lines).hasSize(2);
    // Byte for byte what the proxy wrote before the record moved to policy.event: older control
    // planes and pooled proxies of an earlier build read and write the same lines.
    assertThat(lines[1])
        .isEqualTo(
            "{\"time\":\"2026-11-29T15:00:01Z\",\"run_id\":\"run-1\",\"client\":\"10.0.0.5:51001\","
                + "\"method\":\"GET\",\"host\":\"evil.example\",\"port\":80,\"decision\":\"deny\","
                + "\"reason\":\"not-allowed\",\"address\":null,\"bytes_up\":0,\"bytes_down\":0,"
                + "\"duration_ms\":0,\"first\":false,\"end\":null,"
                + "\"detail\":\"the host is not on the allow-list\"}");
    JsonNode allow = new ObjectMapper().readTree(lines[0]);
    assertThat(allow.fieldNames())
        .toIterable()
        .containsExactly(
            "time",
            "run_id",
            "client",
            "method",
            "host",
            "port",
            "decision",
            "reason",
            "address",
            "bytes_up",
            "bytes_down",
            "duration_ms",
            "first",
            "end",
            "detail");
    assertThat(allow.get("time").asText()).isEqualTo("2026-11-29T15:00:00Z");
    assertThat(allow.get("decision").asText()).isEqualTo("allow");
    assertThat(allow.get("reason").asText()).isEqualTo("allowed");
    assertThat(allow.get("bytes_down").asLong()).isEqualTo(4096);
    assertThat(allow.get("first").asBoolean()).isTrue();
    JsonNode deny = new ObjectMapper().readTree(lines[1]);
    assertThat(deny.get("decision").asText()).isEqualTo("deny");
    assertThat(deny.get("reason").asText()).isEqualTo("not-allowed");
    assertThat(deny.get("address").isNull()).isTrue();
  }

  @Test
  void everyReasonHasADistinctLowerCaseWireName() {
    assertThat(java.util.Arrays.stream(Reason.values()).map(Reason::wireName))
        .doesNotHaveDuplicates()
        .allMatch(name -> name.matches("[a-z]+(-[a-z]+)*"));
  }
}
