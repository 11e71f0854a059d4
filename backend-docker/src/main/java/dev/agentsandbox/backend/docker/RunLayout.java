package dev.agentsandbox.backend.docker;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.agentsandbox.backend.Isolation;
import dev.agentsandbox.backend.Manifest;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.backend.SandboxPlan;
import dev.agentsandbox.policy.config.ProxyPolicy;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The Docker objects of one run, derived from its spec alone: the fenced private network, the
 * network that leads out, the proxy container (on both) and the workload container (on the private
 * network only). The plan and the launch both read them from here, so what a plan shows is what a
 * launch creates.
 */
final class RunLayout {
  /** Stands for the proxy's address on the private network, which Docker assigns at launch. */
  static final String PROXY_ADDRESS_PLACEHOLDER = "<proxy-ip>";

  /**
   * The host gets no address on the private bridge, so nothing in the sandbox can reach a host
   * service through it; with {@code Internal} Docker also drops everything routed off the bridge.
   */
  static final Map<String, String> FENCE_OPTIONS =
      Map.of(
          "com.docker.network.bridge.inhibit_ipv4", "true",
          "com.docker.network.bridge.enable_ip_masquerade", "false");

  /** Only the proxy sits on the way-out network; nothing else should talk across it. */
  static final Map<String, String> EGRESS_OPTIONS =
      Map.of("com.docker.network.bridge.enable_icc", "false");

  private static final ObjectMapper JSON = new ObjectMapper();

  private final RunSpec spec;
  private final DockerBackendConfig config;
  private final String runtime;

  RunLayout(RunSpec spec, DockerBackendConfig config, String runtime) {
    this.spec = spec;
    this.config = config;
    this.runtime = runtime;
  }

  String fenceName() {
    return "asb-" + spec.runId() + "-fence";
  }

  String egressName() {
    return "asb-" + spec.runId() + "-egress";
  }

  NetworkSpec fence() {
    return new NetworkSpec(fenceName(), true, FENCE_OPTIONS, spec.labels());
  }

  NetworkSpec egress() {
    return new NetworkSpec(egressName(), false, EGRESS_OPTIONS, spec.labels());
  }

  /** The proxy container: trusted code, so runc; hardened like the workload all the same. */
  ContainerSpec proxy() {
    Map<String, String> env = new LinkedHashMap<>();
    env.put("AGENT_SANDBOX_PROXY_POLICY", proxyPolicyJson());
    return new ContainerSpec(
        "asb-" + spec.runId() + "-proxy",
        config.proxyImage(),
        List.of(),
        List.of(),
        env,
        java.util.Set.of(),
        config.workloadUser(),
        spec.labels(),
        "runc",
        fenceName(),
        Map.of("/tmp", "rw,noexec,nosuid,nodev,size=16m,mode=1777"),
        config.proxyMemoryMb() * 1024L * 1024L,
        1_000_000_000L,
        512);
  }

  /** The workload container, its proxy variables pointing at {@code proxyAddress}. */
  ContainerSpec agent(String proxyAddress) {
    String proxyUrl = "http://" + proxyAddress + ":" + config.proxyPort();
    Map<String, String> env = new LinkedHashMap<>(new TreeMap<>(spec.env()));
    // Both spellings: curl reads only the lower-case http_proxy, most other tools either.
    for (String key : List.of("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")) {
      env.put(key, proxyUrl);
    }
    env.put("NO_PROXY", "");
    env.put("no_proxy", "");
    return new ContainerSpec(
        "asb-" + spec.runId() + "-agent",
        spec.image(),
        List.of(),
        spec.command(),
        env,
        spec.env().keySet(),
        config.workloadUser(),
        spec.labels(),
        runtime,
        fenceName(),
        Map.of("/tmp", "rw,nosuid,nodev,size=" + config.tmpfsMb() + "m,mode=1777"),
        spec.resources().memoryMb() * 1024L * 1024L,
        Math.round(spec.resources().cpus() * 1_000_000_000d),
        spec.resources().pids());
  }

  /** The policy document the proxy reads ({@code --policy FILE}, see docs/proxy.md). */
  String proxyPolicyJson() {
    try {
      return JSON.writeValueAsString(
          ProxyPolicy.forRun(spec.egress(), spec.runId(), config.proxyPort()).toTree());
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("serializing the proxy policy cannot fail for plain maps", e);
    }
  }

  /** Everything in creation order, as {@link DockerBackend#launch} creates it. */
  SandboxPlan plan(Isolation isolation) {
    List<Manifest> manifests = new ArrayList<>();
    manifests.add(new Manifest("network", fenceName(), fence().body()));
    manifests.add(new Manifest("network", egressName(), egress().body()));
    ContainerSpec proxy = proxy();
    manifests.add(new Manifest("container", proxy.name(), proxy.body()));
    Map<String, Object> connect = new LinkedHashMap<>();
    connect.put("Container", proxy.name());
    connect.put("Network", egressName());
    manifests.add(new Manifest("network-connect", egressName(), connect));
    ContainerSpec agent = agent(PROXY_ADDRESS_PLACEHOLDER);
    manifests.add(new Manifest("container", agent.name(), agent.body()));
    return new SandboxPlan(DockerBackend.NAME, runtime, isolation, manifests);
  }
}
