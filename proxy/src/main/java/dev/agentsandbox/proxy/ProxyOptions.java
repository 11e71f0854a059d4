package dev.agentsandbox.proxy;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine.Option;

/**
 * The {@code agent-sandbox proxy} command line as parsed, before validation (a picocli mixin of
 * {@link ProxyCommand}): every field is null (or empty) when its option was not given. {@link
 * #config()} turns it into the validated {@link ProxyConfig}.
 */
final class ProxyOptions {
  @Option(
      names = "--policy",
      paramLabel = "FILE",
      description = "Read everything from this JSON file.")
  Path policy;

  @Option(
      names = "--await-policy",
      description =
          "Start without a policy, refusing everything, and read the run's policy (one JSON"
              + " document) from standard input; with --listen, --decisions, --metrics and limits"
              + " only.")
  boolean awaitPolicy;

  @Option(names = "--listen", paramLabel = "HOST:PORT", description = "Where to accept clients.")
  String listen;

  @Option(names = "--allow", paramLabel = "LIST", description = "Comma-separated allow-list.")
  String allow;

  @Option(
      names = "--instance-allow",
      paramLabel = "LIST",
      description = "The instance egress policy (unrestricted when absent).")
  String instanceAllow;

  @Option(
      names = "--internal-cidr",
      paramLabel = "CIDR:PORTS",
      description =
          "An internal destination allowed names may resolve to, on these ports only"
              + " (10.20.1.0/24:4000,4001).")
  List<String> internalCidrs = new ArrayList<>();

  @Option(names = "--hosts", paramLabel = "FILE", description = "Resolve from a hosts file.")
  Path hosts;

  @Option(names = "--dns-server", paramLabel = "HOST:PORT", description = "Ask only this server.")
  String dnsServer;

  @Option(names = "--decisions", paramLabel = "FILE|-", description = "Write decisions here.")
  String decisions;

  @Option(names = "--run-id", paramLabel = "ID", description = "The run this proxy serves.")
  String runId;

  @Option(names = "--metrics", paramLabel = "HOST:PORT", description = "Serve Prometheus metrics.")
  String metrics;

  @Option(names = "--connect-timeout", paramLabel = "DURATION", description = "e.g. 10s")
  String connectTimeout;

  @Option(names = "--idle-timeout", paramLabel = "DURATION", description = "e.g. 5m")
  String idleTimeout;

  @Option(names = "--max-lifetime", paramLabel = "DURATION", description = "e.g. 1h")
  String maxLifetime;

  @Option(names = "--max-connections", paramLabel = "N", description = "Concurrent clients.")
  Integer maxConnections;

  /**
   * The validated configuration these options describe.
   *
   * @throws InvalidProxyConfigException naming the option or file field that is wrong
   */
  ProxyConfig config() {
    if (awaitPolicy
        && (policy != null
            || allow != null
            || instanceAllow != null
            || !internalCidrs.isEmpty()
            || hosts != null
            || dnsServer != null
            || runId != null)) {
      throw new InvalidProxyConfigException(
          "--await-policy takes only --listen, --decisions, --metrics and limits: the allow-list,"
              + " names, internal destinations and run id come with the policy on standard input");
    }
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
    return awaitPolicy
        ? ProxyConfigs.fixedForAwaitedPolicy(this, limits)
        : ProxyConfigs.fromOptions(this, limits);
  }
}
