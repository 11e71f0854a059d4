package dev.agentsandbox.runs;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.agentsandbox.policy.event.DecisionRecord;
import dev.agentsandbox.policy.net.Reason;
import java.io.UncheckedIOException;
import java.time.Instant;

/** Proxy decision lines as the proxy writes them: the wire form of {@link DecisionRecord}. */
final class Decisions {
  private static final ObjectMapper JSON = new ObjectMapper();

  private Decisions() {}

  static String deny(String host, int port, Reason reason) {
    return line(
        new DecisionRecord(
            Instant.now(),
            "run",
            "172.30.0.2:40000",
            "CONNECT",
            host,
            port,
            false,
            reason,
            null,
            0,
            0,
            1,
            false,
            null,
            "refused by the test"));
  }

  static String allow(String host, int port, boolean first) {
    return line(
        new DecisionRecord(
            Instant.now(),
            "run",
            "172.30.0.2:40000",
            "CONNECT",
            host,
            port,
            true,
            Reason.ALLOWED,
            "203.0.113.7",
            10,
            20,
            3,
            first,
            "client-closed",
            null));
  }

  static String line(DecisionRecord decision) {
    try {
      return JSON.writeValueAsString(decision.toTree());
    } catch (JsonProcessingException e) {
      throw new UncheckedIOException(e);
    }
  }
}
