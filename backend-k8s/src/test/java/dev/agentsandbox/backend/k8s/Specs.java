package dev.agentsandbox.backend.k8s;

import dev.agentsandbox.backend.RunCredential;
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

  /**
   * The run verify-fence.sh builds (deploy/k3s/sandbox/fence-probe.yaml): one internal range on TCP
   * 8443, whose placeholder {@code 192.0.2.1/32} the script replaces by its target pod's /32.
   */
  static RunSpec fenceProbe(String targetCidr) {
    return spec("fenceprobe", List.of(range("fence-target", targetCidr, 8443)), false);
  }

  /** A range destination on the given ports. */
  static InternalDestination range(String name, String cidr, Integer... ports) {
    return InternalDestination.range(name, Cidr.parse(cidr), new TreeSet<>(List.of(ports)));
  }

  /** The value of {@link #withCredentials}' token, to look for where it must never be. */
  static final String TOKEN = "asb_rt_k8s-7f3c9e1d0b2a4c6e8f";

  /** The value of {@link #withCredentials}' JWT. */
  static final String JWT = "eyJhbGciOiJFUzI1NiJ9.eyJydW5faWQiOiJrMSJ9.c2lnbmF0dXJl";

  /**
   * The run with two credentials: a run token as a file only, a JWT as a file and as {@code
   * LLM_TOKEN}, and the playbook's run labels.
   */
  static RunSpec withCredentials(String runId) {
    RunSpec base = spec(runId);
    return new RunSpec(
            base.runId(),
            base.agent(),
            base.image(),
            base.command(),
            base.env(),
            base.egress(),
            base.resources(),
            base.ttl(),
            base.expiresAt(),
            false,
            Map.of("owner", "alice", "task-ref", "JIRA-1042"),
            List.of())
        .withCredentials(
            List.of(
                new RunCredential("run-token", TOKEN, Optional.empty(), EXPIRES),
                new RunCredential("llm.jwt", JWT, Optional.of("LLM_TOKEN"), EXPIRES)));
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
