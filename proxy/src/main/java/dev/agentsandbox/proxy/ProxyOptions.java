package dev.agentsandbox.proxy;

import java.nio.file.Path;
import java.util.List;

/**
 * The {@code agent-sandbox proxy} command line as parsed, before validation: every field is null
 * (or empty) when its option was not given. {@link #config()} turns it into the validated {@link
 * ProxyConfig}.
 */
record ProxyOptions(
    Path policy,
    String listen,
    String allow,
    String instanceAllow,
    List<String> internalCidrs,
    Path hosts,
    String dnsServer,
    String decisions,
    String runId,
    String metrics,
    String connectTimeout,
    String idleTimeout,
    String maxLifetime,
    Integer maxConnections) {
  ProxyOptions {
    internalCidrs = List.copyOf(internalCidrs);
  }

  /**
   * The validated configuration these options describe.
   *
   * @throws InvalidProxyConfigException naming the option or file field that is wrong
   */
  ProxyConfig config() {
    if (policy != null) {
      if (listen != null
          || allow != null
          || instanceAllow != null
          || !internalCidrs.isEmpty()
          || hosts != null
          || dnsServer != null
          || decisions != null
          || runId != null
          || metrics != null
          || connectTimeout != null
          || idleTimeout != null
          || maxLifetime != null
          || maxConnections != null) {
        throw new InvalidProxyConfigException(
            "--policy cannot be combined with other options (put everything in the file)");
      }
      return ProxyConfigs.fromPolicyFile(policy);
    }
    Limits d = Limits.DEFAULTS;
    Limits limits =
        new Limits(
            connectTimeout == null
                ? d.connectTimeout()
                : ProxyConfigs.duration(connectTimeout, "--connect-timeout"),
            d.dnsTimeout(),
            idleTimeout == null
                ? d.idleTimeout()
                : ProxyConfigs.duration(idleTimeout, "--idle-timeout"),
            maxLifetime == null
                ? d.maxLifetime()
                : ProxyConfigs.duration(maxLifetime, "--max-lifetime"),
            maxConnections == null ? d.maxConnections() : maxConnections,
            d.maxHeaderBytes(),
            d.ioThreads());
    return ProxyConfigs.fromOptions(
        listen,
        allow,
        instanceAllow,
        internalCidrs,
        hosts,
        dnsServer,
        decisions,
        runId,
        metrics,
        limits);
  }
}
