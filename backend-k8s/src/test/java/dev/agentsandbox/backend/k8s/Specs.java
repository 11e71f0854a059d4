package dev.agentsandbox.backend.k8s;

import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.config.InternalDestination;
import dev.agentsandbox.policy.config.Resources;
import dev.agentsandbox.policy.config.RunEgress;
import dev.agentsandbox.policy.net.Cidr;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.TreeSet;

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

  /** The LLM gateway of the playbook: pods app=platform-gateway in platform, Service port 4000. */
  static final InternalDestination GATEWAY =
      InternalDestination.service(
          "llm-gateway",
          new InternalDestination.ClusterService(
              "platform",
              new TreeMap<>(Map.of("app", "platform-gateway")),
              "platform-gateway.platform.svc.cluster.local",
              new TreeSet<>(List.of(8080))),
          new TreeSet<>(List.of(4000)));

  /** A range destination on the given ports. */
  static InternalDestination range(String name, String cidr, Integer... ports) {
    return InternalDestination.range(name, Cidr.parse(cidr), new TreeSet<>(List.of(ports)));
  }

  static RunSpec spec(
      String runId, List<InternalDestination> internal, boolean requireRuntimeClass) {
    return new RunSpec(
        runId,
        "helper",
        "registry.example.internal/agents/helper:2",
        List.of("sh", "-c", "echo hello"),
        Map.of("TASK", "build"),
        new RunEgress(
            AllowList.parse(List.of("api.github.com", "*.pypi.org")),
            Optional.of(AllowList.parse(List.of("*.github.com", "*.pypi.org"))),
            internal,
            Map.of("git.internal", List.of("10.20.0.7"))),
        new Resources(1.0, 512, 256),
        Duration.ofMinutes(10),
        EXPIRES,
        requireRuntimeClass);
  }
}
