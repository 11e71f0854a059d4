package dev.agentsandbox.proxy;

import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.net.InternalRanges;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Everything one proxy process needs, validated: from the command line or the policy file.
 *
 * @param listenHost the address to listen on (an IP literal or {@code localhost})
 * @param listenPort the port to listen on; 0 picks a free one
 * @param allow the sandbox allow-list
 * @param instanceAllow the instance egress policy, empty when unrestricted
 * @param internal the operator's declared internal destinations
 * @param hosts a fixed name table used instead of DNS, when present
 * @param dnsServer the only name server to ask, when present (else the system's)
 * @param decisions where to write decision lines: a file path or {@code -} for stdout
 * @param runId the run this proxy serves (may be empty)
 * @param metrics where to serve Prometheus metrics, when present
 * @param limits resource limits
 * @param inspect the hosts whose TLS the proxy terminates, with the values of the credentials it
 *     injects; empty when every host is an opaque tunnel
 */
public record ProxyConfig(
    String listenHost,
    int listenPort,
    AllowList allow,
    Optional<AllowList> instanceAllow,
    InternalRanges internal,
    Optional<Map<String, List<InetAddress>>> hosts,
    Optional<InetSocketAddress> dnsServer,
    Optional<String> decisions,
    String runId,
    Optional<InetSocketAddress> metrics,
    Limits limits,
    Optional<InspectConfig> inspect) {
  public ProxyConfig {
    if (listenHost == null || listenHost.isBlank()) {
      throw new InvalidProxyConfigException("listen: the host is missing (write HOST:PORT)");
    }
    if (listenPort < 0 || listenPort > 65535) {
      throw new InvalidProxyConfigException("listen: the port must be 0 to 65535");
    }
    if (allow == null || instanceAllow == null || internal == null || hosts == null) {
      throw new InvalidProxyConfigException(
          "allow, instance_allow, internal and hosts are required");
    }
    if (dnsServer == null
        || decisions == null
        || runId == null
        || metrics == null
        || limits == null) {
      throw new InvalidProxyConfigException(
          "dns_server, decisions, run_id, metrics and limits are required");
    }
    if (runId.length() > 128 || !runId.chars().allMatch(c -> c > 0x20 && c < 0x7f)) {
      throw new InvalidProxyConfigException(
          "run_id: at most 128 printable ASCII characters without spaces");
    }
    hosts = hosts.map(Map::copyOf);
    if (inspect == null) {
      throw new InvalidProxyConfigException("inspect is required (empty for none)");
    }
  }

  /** A configuration that inspects no host. */
  public ProxyConfig(
      String listenHost,
      int listenPort,
      AllowList allow,
      Optional<AllowList> instanceAllow,
      InternalRanges internal,
      Optional<Map<String, List<InetAddress>>> hosts,
      Optional<InetSocketAddress> dnsServer,
      Optional<String> decisions,
      String runId,
      Optional<InetSocketAddress> metrics,
      Limits limits) {
    this(
        listenHost,
        listenPort,
        allow,
        instanceAllow,
        internal,
        hosts,
        dnsServer,
        decisions,
        runId,
        metrics,
        limits,
        Optional.empty());
  }
}
