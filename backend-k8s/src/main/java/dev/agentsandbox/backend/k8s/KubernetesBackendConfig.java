package dev.agentsandbox.backend.k8s;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Consumer;
import java.util.regex.Pattern;

/**
 * How the Kubernetes backend builds and watches sandboxes on one cluster.
 *
 * @param proxyImage the egress proxy's image ({@code agent-sandbox/proxy:<tag>})
 * @param proxyPort the port the proxy listens on and the only port the agent may reach
 * @param dnsNamespace the namespace of the cluster DNS pods ({@code kube-system})
 * @param dnsPodLabels the labels of the cluster DNS pods ({@code k8s-app: kube-dns})
 * @param dualStack whether the cluster has IPv6 pod networking, so IPv6 blocks are needed
 * @param runtimeClassName the gVisor RuntimeClass ({@code gvisor})
 * @param requireRuntimeClass refuse to launch when the RuntimeClass is missing instead of using the
 *     node's default runtime
 * @param controlPlaneNamespace the control plane's own namespace, where the reaper's Lease lives
 * @param podSecurityVersion the Pod Security Standards version pinned on sandbox namespaces
 * @param quota the per-sandbox quota and the proxy's own resources
 * @param proxyReadyTimeout how long a launch waits for the proxy's ClusterIP and readiness
 * @param pollInterval how often a running sandbox's Job is checked
 * @param jobTtlAfterFinished how long a finished Job stays for inspection before Kubernetes removes
 *     it (the namespace is deleted at teardown anyway)
 * @param outputTailLines how many lines of the agent's log are collected
 * @param trustedRuntimeHandlers the RuntimeClass handlers that mean gVisor ({@code runsc}); a
 *     RuntimeClass with any other handler is treated as absent, whatever its name
 * @param probeTimeout how long {@code probe} and {@code plan} wait for the API's answer about the
 *     RuntimeClass before answering without it
 * @param probeCacheTtl how long that answer is reused by {@code probe} and {@code plan} (a launch
 *     always asks afresh)
 * @param nodeCidrs the nodes' addresses, excepted from the proxy's public egress (nodes with public
 *     addresses would otherwise be reachable on the kubelet's port)
 * @param apiServerCidrs the API server's addresses, excepted from the proxy's public egress
 * @param sessions how sessions reach their pods' step runners
 */
public record KubernetesBackendConfig(
    String proxyImage,
    int proxyPort,
    String dnsNamespace,
    Map<String, String> dnsPodLabels,
    boolean dualStack,
    String runtimeClassName,
    boolean requireRuntimeClass,
    String controlPlaneNamespace,
    String podSecurityVersion,
    SandboxQuota quota,
    Duration proxyReadyTimeout,
    Duration pollInterval,
    Duration jobTtlAfterFinished,
    int outputTailLines,
    List<String> trustedRuntimeHandlers,
    Duration probeTimeout,
    Duration probeCacheTtl,
    List<String> nodeCidrs,
    List<String> apiServerCidrs,
    SessionSettings sessions) {
  private static final Pattern DNS_LABEL = Pattern.compile("[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?");
  private static final Pattern PSS_VERSION = Pattern.compile("v1\\.[0-9]{1,3}");

  public KubernetesBackendConfig {
    Objects.requireNonNull(proxyImage, "proxyImage");
    if (proxyImage.isBlank()) {
      throw new IllegalArgumentException("proxyImage is blank");
    }
    if (proxyPort < 1 || proxyPort > 65535) {
      throw new IllegalArgumentException("proxyPort out of range: " + proxyPort);
    }
    requireLabel("dnsNamespace", dnsNamespace);
    dnsPodLabels = Map.copyOf(dnsPodLabels);
    if (dnsPodLabels.isEmpty()) {
      // An empty pod selector would open port 53 to every pod of the DNS namespace.
      throw new IllegalArgumentException("dnsPodLabels is empty");
    }
    requireLabel("runtimeClassName", runtimeClassName);
    requireLabel("controlPlaneNamespace", controlPlaneNamespace);
    Objects.requireNonNull(podSecurityVersion, "podSecurityVersion");
    if (!PSS_VERSION.matcher(podSecurityVersion).matches()) {
      // "latest" would let a cluster upgrade change what the namespace enforces.
      throw new IllegalArgumentException(
          "podSecurityVersion must be a pinned version such as v1.31: " + podSecurityVersion);
    }
    Objects.requireNonNull(quota, "quota");
    requirePositive("proxyReadyTimeout", proxyReadyTimeout);
    requirePositive("pollInterval", pollInterval);
    requirePositive("jobTtlAfterFinished", jobTtlAfterFinished);
    if (outputTailLines < 1) {
      throw new IllegalArgumentException("outputTailLines must be positive: " + outputTailLines);
    }
    trustedRuntimeHandlers = List.copyOf(trustedRuntimeHandlers);
    if (trustedRuntimeHandlers.isEmpty()) {
      throw new IllegalArgumentException("trustedRuntimeHandlers is empty");
    }
    trustedRuntimeHandlers.forEach(h -> requireLabel("trustedRuntimeHandlers", h));
    requirePositive("probeTimeout", probeTimeout);
    requirePositive("probeCacheTtl", probeCacheTtl);
    nodeCidrs = ClusterCidrs.parse("nodeCidrs", nodeCidrs);
    apiServerCidrs = ClusterCidrs.parse("apiServerCidrs", apiServerCidrs);
    Objects.requireNonNull(sessions, "sessions");
    if (sessions.port() == proxyPort) {
      throw new IllegalArgumentException("the session port must differ from the proxy's port");
    }
  }

  /** The defaults for a k3s cluster with CoreDNS in {@code kube-system} and gVisor installed. */
  public static KubernetesBackendConfig defaults(String proxyImage, String controlPlaneNamespace) {
    return new KubernetesBackendConfig(
        proxyImage,
        3128,
        "kube-system",
        Map.of("k8s-app", "kube-dns"),
        false,
        "gvisor",
        false,
        controlPlaneNamespace,
        "v1.31",
        SandboxQuota.DEFAULT,
        Duration.ofSeconds(60),
        Duration.ofSeconds(1),
        Duration.ofMinutes(5),
        200,
        List.of("runsc"),
        Duration.ofMillis(1500),
        Duration.ofSeconds(10),
        List.of(),
        List.of(),
        SessionSettings.DEFAULT);
  }

  /** This configuration with {@link #requireRuntimeClass} set as given. */
  public KubernetesBackendConfig withRequireRuntimeClass(boolean require) {
    return with(c -> c.requireRuntimeClass = require);
  }

  /** This configuration with {@link #dualStack} set as given. */
  public KubernetesBackendConfig withDualStack(boolean dual) {
    return with(c -> c.dualStack = dual);
  }

  /** This configuration with the given launch and polling timings. */
  public KubernetesBackendConfig withTimings(Duration proxyReady, Duration poll) {
    return with(
        c -> {
          c.proxyReadyTimeout = proxyReady;
          c.pollInterval = poll;
        });
  }

  /** This configuration with the given RuntimeClass handlers trusted as gVisor. */
  public KubernetesBackendConfig withTrustedRuntimeHandlers(List<String> handlers) {
    return with(c -> c.trustedRuntimeHandlers = handlers);
  }

  /** This configuration with the given probe time-out and cache lifetime. */
  public KubernetesBackendConfig withProbe(Duration timeout, Duration cacheTtl) {
    return with(
        c -> {
          c.probeTimeout = timeout;
          c.probeCacheTtl = cacheTtl;
        });
  }

  /**
   * This configuration with the given node and API server addresses kept from the proxy's egress.
   */
  public KubernetesBackendConfig withClusterCidrs(List<String> nodes, List<String> apiServers) {
    return with(
        c -> {
          c.nodeCidrs = nodes;
          c.apiServerCidrs = apiServers;
        });
  }

  /** This configuration with the given session settings. */
  public KubernetesBackendConfig withSessions(SessionSettings settings) {
    return with(c -> c.sessions = settings);
  }

  /** A copy with some fields changed, validated again by the canonical constructor. */
  private KubernetesBackendConfig with(Consumer<Copy> change) {
    Copy copy = new Copy(this);
    change.accept(copy);
    return copy.build();
  }

  /** The fields of one configuration, writable, so each with-er names only what it changes. */
  private static final class Copy {
    String proxyImage;
    int proxyPort;
    String dnsNamespace;
    Map<String, String> dnsPodLabels;
    boolean dualStack;
    String runtimeClassName;
    boolean requireRuntimeClass;
    String controlPlaneNamespace;
    String podSecurityVersion;
    SandboxQuota quota;
    Duration proxyReadyTimeout;
    Duration pollInterval;
    Duration jobTtlAfterFinished;
    int outputTailLines;
    List<String> trustedRuntimeHandlers;
    Duration probeTimeout;
    Duration probeCacheTtl;
    List<String> nodeCidrs;
    List<String> apiServerCidrs;
    SessionSettings sessions;

    Copy(KubernetesBackendConfig c) {
      proxyImage = c.proxyImage;
      proxyPort = c.proxyPort;
      dnsNamespace = c.dnsNamespace;
      dnsPodLabels = c.dnsPodLabels;
      dualStack = c.dualStack;
      runtimeClassName = c.runtimeClassName;
      requireRuntimeClass = c.requireRuntimeClass;
      controlPlaneNamespace = c.controlPlaneNamespace;
      podSecurityVersion = c.podSecurityVersion;
      quota = c.quota;
      proxyReadyTimeout = c.proxyReadyTimeout;
      pollInterval = c.pollInterval;
      jobTtlAfterFinished = c.jobTtlAfterFinished;
      outputTailLines = c.outputTailLines;
      trustedRuntimeHandlers = c.trustedRuntimeHandlers;
      probeTimeout = c.probeTimeout;
      probeCacheTtl = c.probeCacheTtl;
      nodeCidrs = c.nodeCidrs;
      apiServerCidrs = c.apiServerCidrs;
      sessions = c.sessions;
    }

    KubernetesBackendConfig build() {
      return new KubernetesBackendConfig(
          proxyImage,
          proxyPort,
          dnsNamespace,
          dnsPodLabels,
          dualStack,
          runtimeClassName,
          requireRuntimeClass,
          controlPlaneNamespace,
          podSecurityVersion,
          quota,
          proxyReadyTimeout,
          pollInterval,
          jobTtlAfterFinished,
          outputTailLines,
          trustedRuntimeHandlers,
          probeTimeout,
          probeCacheTtl,
          nodeCidrs,
          apiServerCidrs,
          sessions);
    }
  }

  private static void requireLabel(String what, String value) {
    Objects.requireNonNull(value, what);
    if (!DNS_LABEL.matcher(value).matches()) {
      throw new IllegalArgumentException(what + " must be a DNS label: " + value);
    }
  }

  private static void requirePositive(String what, Duration value) {
    Objects.requireNonNull(value, what);
    if (value.isNegative() || value.isZero()) {
      throw new IllegalArgumentException(what + " must be positive: " + value);
    }
  }
}
