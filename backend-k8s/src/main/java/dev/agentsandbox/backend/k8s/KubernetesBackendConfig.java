package dev.agentsandbox.backend.k8s;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
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

  /** A builder holding this configuration's values, to change some of them. */
  public Builder toBuilder() {
    return new Builder(this);
  }

  /**
   * The values of one configuration, each settable; {@link #build()} validates them together in the
   * canonical constructor.
   */
  public static final class Builder {
    private String proxyImage;
    private int proxyPort;
    private String dnsNamespace;
    private Map<String, String> dnsPodLabels;
    private boolean dualStack;
    private String runtimeClassName;
    private boolean requireRuntimeClass;
    private String controlPlaneNamespace;
    private String podSecurityVersion;
    private SandboxQuota quota;
    private Duration proxyReadyTimeout;
    private Duration pollInterval;
    private Duration jobTtlAfterFinished;
    private int outputTailLines;
    private List<String> trustedRuntimeHandlers;
    private Duration probeTimeout;
    private Duration probeCacheTtl;
    private List<String> nodeCidrs;
    private List<String> apiServerCidrs;
    private SessionSettings sessions;

    private Builder(KubernetesBackendConfig c) {
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

    public Builder proxyImage(String value) {
      proxyImage = value;
      return this;
    }

    public Builder proxyPort(int value) {
      proxyPort = value;
      return this;
    }

    public Builder dnsNamespace(String value) {
      dnsNamespace = value;
      return this;
    }

    public Builder dnsPodLabels(Map<String, String> value) {
      dnsPodLabels = value;
      return this;
    }

    public Builder dualStack(boolean value) {
      dualStack = value;
      return this;
    }

    public Builder runtimeClassName(String value) {
      runtimeClassName = value;
      return this;
    }

    public Builder requireRuntimeClass(boolean value) {
      requireRuntimeClass = value;
      return this;
    }

    public Builder controlPlaneNamespace(String value) {
      controlPlaneNamespace = value;
      return this;
    }

    public Builder podSecurityVersion(String value) {
      podSecurityVersion = value;
      return this;
    }

    public Builder quota(SandboxQuota value) {
      quota = value;
      return this;
    }

    public Builder proxyReadyTimeout(Duration value) {
      proxyReadyTimeout = value;
      return this;
    }

    public Builder pollInterval(Duration value) {
      pollInterval = value;
      return this;
    }

    public Builder jobTtlAfterFinished(Duration value) {
      jobTtlAfterFinished = value;
      return this;
    }

    public Builder outputTailLines(int value) {
      outputTailLines = value;
      return this;
    }

    public Builder trustedRuntimeHandlers(List<String> value) {
      trustedRuntimeHandlers = value;
      return this;
    }

    public Builder probeTimeout(Duration value) {
      probeTimeout = value;
      return this;
    }

    public Builder probeCacheTtl(Duration value) {
      probeCacheTtl = value;
      return this;
    }

    public Builder nodeCidrs(List<String> value) {
      nodeCidrs = value;
      return this;
    }

    public Builder apiServerCidrs(List<String> value) {
      apiServerCidrs = value;
      return this;
    }

    public Builder sessions(SessionSettings value) {
      sessions = value;
      return this;
    }

    /**
     * The configuration.
     *
     * @throws IllegalArgumentException naming the value that is wrong
     */
    public KubernetesBackendConfig build() {
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
