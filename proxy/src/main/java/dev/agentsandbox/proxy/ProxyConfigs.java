package dev.agentsandbox.proxy;

import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.InvalidHostException;
import dev.agentsandbox.policy.net.InternalRanges;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/** Builds a validated {@link ProxyConfig} from command-line values or a policy file. */
final class ProxyConfigs {
  private ProxyConfigs() {}

  static ProxyConfig fromPolicyFile(Path file) {
    PolicyFile policy = PolicyFile.read(file);
    String where = "policy file " + file + ": ";
    if (policy.listen() == null) {
      throw new InvalidProxyConfigException(where + "listen is required (HOST:PORT)");
    }
    if (policy.allow() == null) {
      throw new InvalidProxyConfigException(where + "allow is required (a list of entries)");
    }
    HostPort listen = prefixed(where, () -> HostPort.parse(policy.listen(), "listen"));
    Limits limits = prefixed(where, () -> limits(policy.limits()));
    return prefixed(
        where,
        () ->
            new ProxyConfig(
                listen.host(),
                listen.port(),
                allowList("allow", policy.allow()),
                Optional.ofNullable(policy.instanceAllow())
                    .map(list -> allowList("instance_allow", list)),
                internal(policy.internalCidrs() == null ? List.of() : policy.internalCidrs()),
                Optional.ofNullable(policy.hosts())
                    .map(table -> StaticHostResolver.parseTable(table, "hosts")),
                Optional.ofNullable(policy.dnsServer())
                    .map(text -> socket(HostPort.parse(text, "dns_server"))),
                Optional.ofNullable(policy.decisions()),
                policy.runId() == null ? "" : policy.runId(),
                Optional.ofNullable(policy.metrics())
                    .map(text -> socket(HostPort.parse(text, "metrics"))),
                limits));
  }

  static ProxyConfig fromOptions(
      String listen,
      String allow,
      String instanceAllow,
      List<String> internalCidrs,
      Path hostsFile,
      String dnsServer,
      String decisions,
      String runId,
      String metrics,
      Limits limits) {
    if (listen == null) {
      throw new InvalidProxyConfigException("--listen is required (HOST:PORT, e.g. 0.0.0.0:3128)");
    }
    if (allow == null) {
      throw new InvalidProxyConfigException(
          "--allow is required (comma-separated entries; --allow '' refuses everything)");
    }
    HostPort listenAt = HostPort.parse(listen, "--listen");
    Optional<Map<String, List<InetAddress>>> hosts =
        Optional.ofNullable(hostsFile).map(StaticHostResolver::parseHostsFile);
    return new ProxyConfig(
        listenAt.host(),
        listenAt.port(),
        allowList("--allow", split(allow)),
        Optional.ofNullable(instanceAllow).map(text -> allowList("--instance-allow", split(text))),
        internal(internalCidrs == null ? List.of() : internalCidrs),
        hosts,
        Optional.ofNullable(dnsServer).map(text -> socket(HostPort.parse(text, "--dns-server"))),
        Optional.ofNullable(decisions),
        runId == null ? "" : runId,
        Optional.ofNullable(metrics).map(text -> socket(HostPort.parse(text, "--metrics"))),
        limits);
  }

  static List<String> split(String list) {
    List<String> entries = new ArrayList<>();
    if (list.isBlank()) {
      return entries;
    }
    for (String entry : list.split(",", -1)) {
      entries.add(entry.strip());
    }
    return entries;
  }

  private static AllowList allowList(String option, List<String> entries) {
    for (int i = 0; i < entries.size(); i++) {
      try {
        AllowList.parse(List.of(entries.get(i)));
      } catch (InvalidHostException e) {
        throw new InvalidProxyConfigException(
            option + "[" + i + "] '" + Echo.of(entries.get(i)) + "': " + e.getMessage());
      }
    }
    return AllowList.parse(entries);
  }

  private static InternalRanges internal(List<String> cidrs) {
    try {
      return InternalRanges.parse(cidrs);
    } catch (IllegalArgumentException e) {
      throw new InvalidProxyConfigException(e.getMessage());
    }
  }

  private static InetSocketAddress socket(HostPort hostPort) {
    return InetSocketAddress.createUnresolved(hostPort.host(), hostPort.port());
  }

  private static Limits limits(PolicyFile.LimitsJson json) {
    if (json == null) {
      return Limits.DEFAULTS;
    }
    Limits d = Limits.DEFAULTS;
    return new Limits(
        millis(json.connectTimeoutMs(), d.connectTimeout(), "connect_timeout_ms"),
        millis(json.dnsTimeoutMs(), d.dnsTimeout(), "dns_timeout_ms"),
        millis(json.idleTimeoutMs(), d.idleTimeout(), "idle_timeout_ms"),
        millis(json.maxLifetimeMs(), d.maxLifetime(), "max_lifetime_ms"),
        json.maxConnections() == null ? d.maxConnections() : json.maxConnections(),
        json.maxHeaderBytes() == null ? d.maxHeaderBytes() : json.maxHeaderBytes(),
        json.ioThreads() == null ? d.ioThreads() : json.ioThreads());
  }

  private static Duration millis(Long value, Duration fallback, String name) {
    if (value == null) {
      return fallback;
    }
    if (value <= 0) {
      throw new InvalidProxyConfigException("limits." + name + " must be a positive number");
    }
    return Duration.ofMillis(value);
  }

  /** Parses {@code 500ms}, {@code 10s}, {@code 5m} or {@code 1h} for command-line limits. */
  static Duration duration(String text, String option) {
    String t = text.strip();
    long factor;
    String number;
    if (t.endsWith("ms")) {
      factor = 1;
      number = t.substring(0, t.length() - 2);
    } else if (t.endsWith("s")) {
      factor = 1000;
      number = t.substring(0, t.length() - 1);
    } else if (t.endsWith("m")) {
      factor = 60_000;
      number = t.substring(0, t.length() - 1);
    } else if (t.endsWith("h")) {
      factor = 3_600_000;
      number = t.substring(0, t.length() - 1);
    } else {
      throw new InvalidProxyConfigException(
          option + ": '" + Echo.of(text) + "' needs a unit (500ms, 10s, 5m, 1h)");
    }
    if (number.isEmpty()
        || number.length() > 9
        || !number.chars().allMatch(c -> c >= '0' && c <= '9')) {
      throw new InvalidProxyConfigException(
          option + ": '" + Echo.of(text) + "' is not a whole number with a unit");
    }
    return Duration.ofMillis(Long.parseLong(number) * factor);
  }

  private static <T> T prefixed(String where, java.util.function.Supplier<T> build) {
    try {
      return build.get();
    } catch (InvalidProxyConfigException e) {
      throw new InvalidProxyConfigException(where + e.getMessage(), e);
    }
  }
}
