package dev.agentsandbox.backend.k8s;

import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.config.Resources;
import dev.agentsandbox.policy.config.RunEgress;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/** Run specs and configurations for the tests. */
final class Specs {
  static final Instant EXPIRES = Instant.parse("2030-01-01T00:00:00Z");

  private Specs() {}

  static KubernetesBackendConfig config() {
    return KubernetesBackendConfig.defaults(
        "registry.example.internal/agent-sandbox/proxy:1.0", "agent-sandbox");
  }

  static RunSpec spec(String runId) {
    return spec(runId, List.of(), false);
  }

  static RunSpec spec(String runId, List<String> internalCidrs, boolean requireRuntimeClass) {
    return new RunSpec(
        runId,
        "helper",
        "registry.example.internal/agents/helper:2",
        List.of("sh", "-c", "echo hello"),
        Map.of("TASK", "build"),
        new RunEgress(
            AllowList.parse(List.of("api.github.com", "*.pypi.org")),
            Optional.of(AllowList.parse(List.of("*.github.com", "*.pypi.org"))),
            internalCidrs,
            Map.of("git.internal", List.of("10.20.0.7"))),
        new Resources(1.0, 512, 256),
        Duration.ofMinutes(10),
        EXPIRES,
        requireRuntimeClass);
  }
}
