package dev.agentsandbox.policy.config;

import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.net.InternalRule;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.TreeMap;

/**
 * The policy document one egress proxy reads ({@code --policy FILE}, see docs/proxy.md): where it
 * listens, what it lets through, how it resolves names and where it reports. Every backend writes
 * it with {@link #forRun} and {@link #toTree}; the proxy reads it with {@link #read}, so the schema
 * lives in one place. Immutable and thread-safe.
 *
 * @param listen {@code HOST:PORT} the proxy listens on
 * @param allow the agent's sandbox allow-list
 * @param instanceAllow the instance egress policy of the agent's scope; empty means unrestricted
 * @param internal declared internal destinations that allowed names may resolve to, with ports
 * @param hosts a fixed name-to-addresses table used instead of DNS for every name (a name not in it
 *     does not resolve); absent means DNS
 * @param dnsServer the only name server to ask, {@code HOST:PORT}
 * @param runId the run the proxy serves, written into every decision
 * @param decisions a file path for decision lines, or {@code -} for standard output
 * @param metrics {@code HOST:PORT} for the metrics endpoint
 * @param limits the proxy's limits; absent ones keep the proxy's defaults
 * @param inspect the hosts whose TLS the proxy terminates, with the run CA's expiry and where the
 *     injected credentials are read from; absent when every host is an opaque tunnel (and then left
 *     out of the document, so a proxy older than inspection still reads it)
 */
public record ProxyPolicy(
    String listen,
    AllowList allow,
    Optional<AllowList> instanceAllow,
    List<InternalRule> internal,
    Optional<Map<String, List<String>>> hosts,
    Optional<String> dnsServer,
    Optional<String> runId,
    Optional<String> decisions,
    Optional<String> metrics,
    Limits limits,
    Optional<InspectPolicy> inspect) {

  /** Where every backend's proxy writes its decisions: standard output, which the backend reads. */
  public static final String DECISIONS_TO_STDOUT = "-";

  public ProxyPolicy {
    Objects.requireNonNull(listen, "listen");
    Objects.requireNonNull(allow, "allow");
    Objects.requireNonNull(instanceAllow, "instanceAllow");
    internal = List.copyOf(internal);
    hosts = hosts.map(ProxyPolicy::copyHosts);
    Objects.requireNonNull(dnsServer, "dnsServer");
    Objects.requireNonNull(runId, "runId");
    Objects.requireNonNull(decisions, "decisions");
    Objects.requireNonNull(metrics, "metrics");
    Objects.requireNonNull(limits, "limits");
    Objects.requireNonNull(inspect, "inspect");
  }

  /** A document without inspected hosts. */
  public ProxyPolicy(
      String listen,
      AllowList allow,
      Optional<AllowList> instanceAllow,
      List<InternalRule> internal,
      Optional<Map<String, List<String>>> hosts,
      Optional<String> dnsServer,
      Optional<String> runId,
      Optional<String> decisions,
      Optional<String> metrics,
      Limits limits) {
    this(
        listen,
        allow,
        instanceAllow,
        internal,
        hosts,
        dnsServer,
        runId,
        decisions,
        metrics,
        limits,
        Optional.empty());
  }

  /**
   * What a proxy whose policy inspects hosts prints on standard error, once, before its ready line:
   * this prefix, then the run CA's certificate as one line of base64 DER. Backends read it to give
   * the sandbox the certificate (never the key, which has no line).
   */
  public static final String CA_LINE = "agent-sandbox proxy run CA certificate ";

  /** The line announcing a run CA's certificate, given as PEM text. */
  public static String caLine(String pem) {
    String body =
        pem.replace("-----BEGIN CERTIFICATE-----", "")
            .replace("-----END CERTIFICATE-----", "")
            .replaceAll("\\s", "");
    return CA_LINE + body;
  }

  /**
   * The run CA's certificate as PEM text if {@code line} announces one ({@link #CA_LINE}); a line
   * whose rest is not base64 announces nothing.
   */
  public static Optional<String> caCertificate(String line) {
    int at = line.indexOf(CA_LINE);
    if (at < 0) {
      return Optional.empty();
    }
    String body = line.substring(at + CA_LINE.length()).strip();
    byte[] der;
    try {
      der = java.util.Base64.getDecoder().decode(body);
    } catch (IllegalArgumentException e) {
      return Optional.empty();
    }
    if (der.length == 0) {
      return Optional.empty();
    }
    return Optional.of(
        "-----BEGIN CERTIFICATE-----\n"
            + java.util.Base64.getMimeEncoder(64, new byte[] {'\n'}).encodeToString(der)
            + "\n-----END CERTIFICATE-----\n");
  }

  /**
   * Where a proxy in its own container or pod reads the values of the credentials it injects: one
   * file per credential name, in a folder of the proxy's alone (never the workload's).
   */
  public static final String PROXY_CREDENTIALS_DIR = "/run/agent-sandbox/proxy-credentials";

  /**
   * The document for one run's proxy: its egress, listening on every address of the sandbox's
   * network at {@code port}, decisions on standard output.
   */
  public static ProxyPolicy forRun(RunEgress egress, String runId, int port) {
    return forRun(egress, runId, "0.0.0.0", port);
  }

  /**
   * The document for one run's proxy listening on {@code host} only (its address on the sandbox's
   * side of the fence), at {@code port}, decisions on standard output. A run that inspects hosts
   * needs {@link #forRun(RunEgress, String, String, int, Instant, String)}.
   */
  public static ProxyPolicy forRun(RunEgress egress, String runId, String host, int port) {
    if (!egress.inspect().isEmpty()) {
      // Dropping the section would let every inspected host's traffic through unruled.
      throw new IllegalArgumentException(
          "run "
              + runId
              + " inspects hosts: its policy needs the CA's expiry and a credentials folder");
    }
    return forRun(egress, runId, host, port, Instant.EPOCH, PROXY_CREDENTIALS_DIR);
  }

  /**
   * The document for one run's proxy: its egress, listening on every address of the sandbox's
   * network at {@code port}, decisions on standard output; when the run inspects hosts, its CA
   * expires at {@code caExpiresAt} (the run's end) and the injected credentials are read from
   * {@code credentialsDir}.
   */
  public static ProxyPolicy forRun(
      RunEgress egress, String runId, int port, Instant caExpiresAt, String credentialsDir) {
    return forRun(egress, runId, "0.0.0.0", port, caExpiresAt, credentialsDir);
  }

  /**
   * The document for one run's proxy listening on {@code host} only, at {@code port}, decisions on
   * standard output; when the run inspects hosts, its CA expires at {@code caExpiresAt} (the run's
   * end) and the injected credentials are read from {@code credentialsDir}.
   */
  public static ProxyPolicy forRun(
      RunEgress egress,
      String runId,
      String host,
      int port,
      Instant caExpiresAt,
      String credentialsDir) {
    Objects.requireNonNull(host, "host");
    Optional<InspectPolicy> inspect =
        egress.inspect().isEmpty()
            ? Optional.empty()
            : Optional.of(
                new InspectPolicy(
                    egress.inspect(),
                    caExpiresAt,
                    egress.inspect().stream().anyMatch(h -> h.inject().isPresent())
                        ? Optional.of(credentialsDir)
                        : Optional.empty(),
                    egress.upstreamCa()));
    return new ProxyPolicy(
        (host.contains(":") ? "[" + host + "]" : host) + ":" + port,
        egress.allow(),
        egress.instanceAllow(),
        egress.internal().stream().map(InternalDestination::rule).toList(),
        // No table means DNS. An empty table present would make the proxy resolve nothing at all:
        // every allowed name refused as "not in the hosts table".
        egress.hosts().isEmpty() ? Optional.empty() : Optional.of(egress.hosts()),
        Optional.empty(),
        Optional.of(runId),
        Optional.of(DECISIONS_TO_STDOUT),
        Optional.empty(),
        Limits.DEFAULTS,
        inspect);
  }

  /**
   * Reads a document parsed from JSON into plain Java values. Unknown fields are refused, so a
   * misspelt limit is an error rather than a silently ignored line; {@code null} means absent.
   *
   * @throws InvalidConfigException with every problem found, each at its JSON path
   */
  public static ProxyPolicy read(Object tree) {
    return ProxyPolicyReader.read(tree);
  }

  /**
   * The document as plain Java values (maps, lists, strings, numbers) in a stable field order, for
   * Jackson to write. {@code instance_allow} is always written, {@code null} meaning unrestricted;
   * other absent fields are left out.
   */
  public Map<String, Object> toTree() {
    Map<String, Object> tree = new LinkedHashMap<>();
    tree.put("listen", listen);
    tree.put("allow", allow.asStrings());
    tree.put("instance_allow", instanceAllow.map(AllowList::asStrings).orElse(null));
    tree.put("internal", internal.stream().map(ProxyPolicy::ruleTree).toList());
    hosts.ifPresent(table -> tree.put("hosts", new TreeMap<>(table)));
    dnsServer.ifPresent(value -> tree.put("dns_server", value));
    runId.ifPresent(value -> tree.put("run_id", value));
    decisions.ifPresent(value -> tree.put("decisions", value));
    metrics.ifPresent(value -> tree.put("metrics", value));
    if (!limits.equals(Limits.DEFAULTS)) {
      tree.put("limits", limits.toTree());
    }
    inspect.ifPresent(section -> tree.put("inspect", section.toTree()));
    return tree;
  }

  private static Map<String, Object> ruleTree(InternalRule rule) {
    Map<String, Object> tree = new LinkedHashMap<>();
    rule.range().ifPresent(range -> tree.put("cidr", range.toString()));
    rule.host().ifPresent(host -> tree.put("host", host));
    tree.put("ports", List.copyOf(rule.ports()));
    return tree;
  }

  private static Map<String, List<String>> copyHosts(Map<String, List<String>> table) {
    Map<String, List<String>> copy = new TreeMap<>();
    table.forEach((name, addresses) -> copy.put(name, List.copyOf(addresses)));
    return java.util.Collections.unmodifiableMap(copy);
  }

  /**
   * Limits set in the document; an empty one keeps the proxy's default for that limit. Every value
   * present is at least 1; the proxy checks its own upper bounds.
   *
   * @param connectTimeoutMs how long a connect may take, in milliseconds
   * @param dnsTimeoutMs how long resolving one name may take, in milliseconds
   * @param idleTimeoutMs how long a connection may carry no bytes, in milliseconds
   * @param maxLifetimeMs how long one tunnel or forwarded request may last, in milliseconds
   * @param maxConnections how many client connections may be open at once
   * @param maxHeaderBytes the largest request head accepted
   * @param ioThreads event-loop threads
   */
  public record Limits(
      OptionalInt connectTimeoutMs,
      OptionalInt dnsTimeoutMs,
      OptionalInt idleTimeoutMs,
      OptionalInt maxLifetimeMs,
      OptionalInt maxConnections,
      OptionalInt maxHeaderBytes,
      OptionalInt ioThreads) {
    /** No limit set: the proxy's defaults throughout. */
    public static final Limits DEFAULTS =
        new Limits(
            OptionalInt.empty(),
            OptionalInt.empty(),
            OptionalInt.empty(),
            OptionalInt.empty(),
            OptionalInt.empty(),
            OptionalInt.empty(),
            OptionalInt.empty());

    public Limits {
      for (OptionalInt value :
          List.of(
              connectTimeoutMs,
              dnsTimeoutMs,
              idleTimeoutMs,
              maxLifetimeMs,
              maxConnections,
              maxHeaderBytes,
              ioThreads)) {
        if (value.isPresent() && value.getAsInt() < 1) {
          throw new IllegalArgumentException("limits must be at least 1: " + value.getAsInt());
        }
      }
    }

    Map<String, Object> toTree() {
      Map<String, Object> tree = new LinkedHashMap<>();
      connectTimeoutMs.ifPresent(v -> tree.put("connect_timeout_ms", v));
      dnsTimeoutMs.ifPresent(v -> tree.put("dns_timeout_ms", v));
      idleTimeoutMs.ifPresent(v -> tree.put("idle_timeout_ms", v));
      maxLifetimeMs.ifPresent(v -> tree.put("max_lifetime_ms", v));
      maxConnections.ifPresent(v -> tree.put("max_connections", v));
      maxHeaderBytes.ifPresent(v -> tree.put("max_header_bytes", v));
      ioThreads.ifPresent(v -> tree.put("io_threads", v));
      return tree;
    }
  }
}
