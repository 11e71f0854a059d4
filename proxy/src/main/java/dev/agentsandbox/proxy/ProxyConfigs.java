package dev.agentsandbox.proxy;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.InvalidHostException;
import dev.agentsandbox.policy.config.ConfigProblem;
import dev.agentsandbox.policy.config.Injection;
import dev.agentsandbox.policy.config.InspectPolicy;
import dev.agentsandbox.policy.config.InvalidConfigException;
import dev.agentsandbox.policy.config.ProxyPolicy;
import dev.agentsandbox.policy.net.InternalRanges;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.stream.Collectors;

/** Builds a validated {@link ProxyConfig} from command-line values or a policy file. */
final class ProxyConfigs {
  private static final ObjectMapper POLICY_JSON =
      new ObjectMapper()
          .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
          .enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION);

  private ProxyConfigs() {}

  static ProxyConfig fromPolicyFile(Path file) {
    ProxyPolicy policy = readPolicy(file);
    String where = "policy file " + file + ": ";
    HostPort listen = prefixed(where, () -> HostPort.parse(policy.listen(), "listen"));
    Limits limits = prefixed(where, () -> limits(policy.limits()));
    return prefixed(
        where,
        () ->
            new ProxyConfig(
                listen.host(),
                listen.port(),
                policy.allow(),
                policy.instanceAllow(),
                new InternalRanges(policy.internal()),
                policy.hosts().map(table -> StaticHostResolver.parseTable(table, "hosts")),
                policy.dnsServer().map(text -> socket(HostPort.parse(text, "dns_server"))),
                policy.decisions(),
                policy.runId().orElse(""),
                policy.metrics().map(text -> socket(HostPort.parse(text, "metrics"))),
                limits,
                policy.inspect().map(ProxyConfigs::inspect)));
  }

  /**
   * The inspect section with the value of every credential it injects, each read from its file in
   * the section's credentials folder (one trailing newline dropped). A message names the credential
   * and the file, never the value.
   */
  static InspectConfig inspect(InspectPolicy section) {
    if (!section.caExpiresAt().isAfter(java.time.Instant.now())) {
      throw new InvalidProxyConfigException(
          "inspect.ca_expires_at: "
              + section.caExpiresAt()
              + " has passed (the run's CA would be expired at once)");
    }
    Map<String, String> values = new java.util.TreeMap<>();
    for (var host : section.hosts()) {
      if (host.inject().isEmpty()) {
        continue;
      }
      String name = host.inject().get().credential();
      if (values.containsKey(name)) {
        continue;
      }
      Path file = Path.of(section.credentialsDir().orElseThrow(), name);
      byte[] bytes;
      try {
        if (Files.size(file) > 16 * 1024 + 1) {
          throw new InvalidProxyConfigException(
              "inspect: credential " + name + " in " + file + " is larger than 16 KiB");
        }
        bytes = Files.readAllBytes(file);
      } catch (IOException e) {
        throw new InvalidProxyConfigException(
            "inspect: reading credential "
                + name
                + " from "
                + file
                + " failed: "
                + e.getClass().getSimpleName()
                + " (the backend writes each injected credential there before the proxy starts)");
      }
      String value = new String(bytes, java.nio.charset.StandardCharsets.UTF_8);
      if (value.endsWith("\n")) {
        value = value.substring(0, value.length() - 1);
      }
      java.util.Optional<String> problem = Injection.valueProblem(value);
      if (problem.isPresent()) {
        throw new InvalidProxyConfigException(
            "inspect: credential " + name + " in " + file + ": " + problem.get());
      }
      values.put(name, value);
    }
    return new InspectConfig(section, values);
  }

  /** The file's JSON, strictly parsed (no trailing tokens, no duplicate keys), then validated. */
  private static ProxyPolicy readPolicy(Path file) {
    Object tree;
    try {
      tree = POLICY_JSON.readValue(Files.readAllBytes(file), Object.class);
    } catch (JsonProcessingException e) {
      throw new InvalidProxyConfigException("reading policy file " + file + ": " + describe(e));
    } catch (IOException e) {
      throw new InvalidProxyConfigException(
          "reading policy file " + file + " failed: " + e.getMessage(), e);
    }
    try {
      return ProxyPolicy.read(tree);
    } catch (InvalidConfigException e) {
      throw new InvalidProxyConfigException(
          "reading policy file "
              + file
              + ": "
              + e.problems().stream()
                  .map(ConfigProblem::toString)
                  .collect(Collectors.joining("; ")));
    }
  }

  /**
   * What an {@code --await-policy} proxy fixes at start: where it listens, its decisions, metrics
   * and limits. The rest (allow-list, names, internal destinations, run id) comes with the policy.
   */
  static ProxyConfig fixedForAwaitedPolicy(ProxyOptions options, Limits limits) {
    if (options.listen == null) {
      throw new InvalidProxyConfigException("--listen is required (HOST:PORT, e.g. 0.0.0.0:3128)");
    }
    HostPort listenAt = HostPort.parse(options.listen, "--listen");
    return new ProxyConfig(
        listenAt.host(),
        listenAt.port(),
        AllowList.EMPTY,
        Optional.empty(),
        InternalRanges.NONE,
        Optional.empty(),
        Optional.empty(),
        Optional.ofNullable(options.decisions),
        "",
        Optional.ofNullable(options.metrics).map(text -> socket(HostPort.parse(text, "--metrics"))),
        limits);
  }

  /**
   * The policy document an {@code --await-policy} proxy received (the schema of the policy file),
   * checked against what the proxy fixed at start: {@code listen}, {@code decisions}, {@code
   * metrics} and {@code limits} may be left out, and when present must be what the proxy started
   * with; a document that asks for anything else is refused rather than half applied.
   *
   * @throws InvalidProxyConfigException naming every problem, prefixed "policy on standard input"
   */
  static ProxyConfig fromAwaitedPolicy(Object tree, ProxyConfig fixed) {
    String where = "policy on standard input: ";
    Object readable = tree;
    boolean listenGiven = true;
    if (tree instanceof Map<?, ?> map && map.get("listen") == null) {
      // The reader requires listen; a document leaving it out means "where the proxy listens".
      Map<Object, Object> copy = new java.util.LinkedHashMap<>(map);
      copy.put("listen", "fixed:0");
      readable = copy;
      listenGiven = false;
    }
    ProxyPolicy policy;
    try {
      policy = ProxyPolicy.read(readable);
    } catch (InvalidConfigException e) {
      throw new InvalidProxyConfigException(
          where
              + e.problems().stream()
                  .map(ConfigProblem::toString)
                  .collect(Collectors.joining("; ")));
    }
    if (listenGiven) {
      HostPort listen = prefixed(where, () -> HostPort.parse(policy.listen(), "listen"));
      if (!listen.host().equals(fixed.listenHost()) || listen.port() != fixed.listenPort()) {
        throw new InvalidProxyConfigException(
            where
                + "listen: '"
                + Echo.of(policy.listen())
                + "' is not where this proxy listens (fixed at start; leave it out)");
      }
    }
    if (policy.decisions().isPresent() && !policy.decisions().equals(fixed.decisions())) {
      throw new InvalidProxyConfigException(
          where
              + "decisions: '"
              + Echo.of(policy.decisions().get())
              + "' is not where this proxy writes its decisions (fixed at start; leave it out)");
    }
    if (policy.metrics().isPresent()) {
      HostPort metrics = prefixed(where, () -> HostPort.parse(policy.metrics().get(), "metrics"));
      boolean same =
          fixed
              .metrics()
              .map(m -> m.getHostString().equals(metrics.host()) && m.getPort() == metrics.port())
              .orElse(false);
      if (!same) {
        throw new InvalidProxyConfigException(
            where
                + "metrics: '"
                + Echo.of(policy.metrics().get())
                + "' is not where this proxy serves metrics (fixed at start; leave it out)");
      }
    }
    if (!policy.limits().equals(ProxyPolicy.Limits.DEFAULTS)) {
      Limits asked = prefixed(where, () -> limits(policy.limits()));
      if (!asked.equals(fixed.limits())) {
        throw new InvalidProxyConfigException(
            where + "limits: differ from the limits this proxy started with (leave them out)");
      }
    }
    return prefixed(
        where,
        () ->
            new ProxyConfig(
                fixed.listenHost(),
                fixed.listenPort(),
                policy.allow(),
                policy.instanceAllow(),
                new InternalRanges(policy.internal()),
                policy.hosts().map(table -> StaticHostResolver.parseTable(table, "hosts")),
                policy.dnsServer().map(text -> socket(HostPort.parse(text, "dns_server"))),
                fixed.decisions(),
                policy.runId().orElse(""),
                fixed.metrics(),
                fixed.limits(),
                policy.inspect().map(ProxyConfigs::inspect)));
  }

  /** The configuration the command-line options (not {@code --policy}) describe. */
  static ProxyConfig fromOptions(ProxyOptions options, Limits limits) {
    String listen = options.listen;
    String allow = options.allow;
    if (listen == null) {
      throw new InvalidProxyConfigException("--listen is required (HOST:PORT, e.g. 0.0.0.0:3128)");
    }
    if (allow == null) {
      throw new InvalidProxyConfigException(
          "--allow is required (comma-separated entries; --allow '' refuses everything)");
    }
    HostPort listenAt = HostPort.parse(listen, "--listen");
    Optional<Map<String, List<InetAddress>>> hosts =
        Optional.ofNullable(options.hosts).map(StaticHostResolver::parseHostsFile);
    return new ProxyConfig(
        listenAt.host(),
        listenAt.port(),
        allowList("--allow", split(allow)),
        Optional.ofNullable(options.instanceAllow)
            .map(text -> allowList("--instance-allow", split(text))),
        internal(options.internalCidrs == null ? List.of() : options.internalCidrs),
        hosts,
        Optional.ofNullable(options.dnsServer)
            .map(text -> socket(HostPort.parse(text, "--dns-server"))),
        Optional.ofNullable(options.decisions),
        options.runId == null ? "" : options.runId,
        Optional.ofNullable(options.metrics).map(text -> socket(HostPort.parse(text, "--metrics"))),
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

  private static Limits limits(ProxyPolicy.Limits set) {
    Limits d = Limits.DEFAULTS;
    return new Limits(
        millis(set.connectTimeoutMs(), d.connectTimeout()),
        millis(set.dnsTimeoutMs(), d.dnsTimeout()),
        millis(set.idleTimeoutMs(), d.idleTimeout()),
        millis(set.maxLifetimeMs(), d.maxLifetime()),
        set.maxConnections().orElse(d.maxConnections()),
        set.maxHeaderBytes().orElse(d.maxHeaderBytes()),
        set.ioThreads().orElse(d.ioThreads()));
  }

  private static Duration millis(OptionalInt value, Duration fallback) {
    return value.isPresent() ? Duration.ofMillis(value.getAsInt()) : fallback;
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

  /** A JSON error in one line: what the parser said (echoed safely) and where. */
  static String describe(JsonProcessingException e) {
    return Echo.of(e.getOriginalMessage())
        + (e.getLocation() == null
            ? ""
            : " at line "
                + e.getLocation().getLineNr()
                + " column "
                + e.getLocation().getColumnNr());
  }
}
