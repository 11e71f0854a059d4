package dev.agentsandbox.policy.evidence;

import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.config.AgentSettings;
import dev.agentsandbox.policy.config.Backend;
import dev.agentsandbox.policy.config.EgressPolicy;
import dev.agentsandbox.policy.config.Resources;
import dev.agentsandbox.policy.config.SandboxConfig;
import dev.agentsandbox.policy.config.ScopeRule;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** Builders for the evidence tables: observations at fixed minutes, one-agent documents. */
final class Observations {
  static final Instant T0 = Instant.parse("2026-11-20T10:00:00Z");

  private Observations() {}

  static EgressObservation deny(String host, int port, String reason, String run) {
    return deny(host, port, reason, run, 1, 0);
  }

  static EgressObservation deny(
      String host, int port, String reason, String run, long count, int minute) {
    Instant at = T0.plusSeconds(60L * minute);
    return new EgressObservation(
        EgressObservation.Kind.DENY, host, port, reason, run, count, at, at);
  }

  static EgressObservation allow(String host, int port, String run) {
    return allow(host, port, run, 0);
  }

  static EgressObservation allow(String host, int port, String run, int minute) {
    Instant at = T0.plusSeconds(60L * minute);
    return new EgressObservation(
        EgressObservation.Kind.ALLOW, host, port, "allowed", run, 1, at, at);
  }

  /** A document configuring {@code planner} with this allow-list, in scope {@code planner}. */
  static SandboxConfig config(List<String> allow) {
    return new SandboxConfig(
        true,
        Backend.DOCKER,
        false,
        new TreeMap<>(
            Map.of(
                "planner",
                new AgentSettings(
                    AllowList.parse(allow),
                    AgentSettings.DEFAULT_IMAGE,
                    "planner",
                    900,
                    Resources.DEFAULT))));
  }

  /** An instance policy restricting scope {@code planner} to these entries. */
  static EgressPolicy restricted(List<String> allow) {
    return new EgressPolicy(
        new TreeMap<>(Map.of("planner", ScopeRule.of(AllowList.parse(allow)))),
        ScopeRule.UNRESTRICTED);
  }

  static AgentEgress lists(List<String> allow, ScopeRule rule) {
    return new AgentEgress(AllowList.parse(allow), rule);
  }
}
