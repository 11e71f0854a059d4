package dev.agentsandbox.policy.config;

import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.net.Cidr;
import dev.agentsandbox.policy.net.InternalRule;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;

/** Reads {@link ProxyPolicy} documents; see {@link ProxyPolicy#read}. */
final class ProxyPolicyReader {
  private static final Set<String> TOP =
      SandboxConfigReader.orderedSet(
          "listen",
          "allow",
          "instance_allow",
          "internal",
          "hosts",
          "dns_server",
          "run_id",
          "decisions",
          "metrics",
          "limits",
          "inspect");
  private static final Set<String> LIMITS =
      SandboxConfigReader.orderedSet(
          "connect_timeout_ms",
          "dns_timeout_ms",
          "idle_timeout_ms",
          "max_lifetime_ms",
          "max_connections",
          "max_header_bytes",
          "io_threads");

  private static final Set<String> INTERNAL =
      SandboxConfigReader.orderedSet("cidr", "host", "ports");

  private ProxyPolicyReader() {}

  static ProxyPolicy read(Object tree) {
    TreeReader reader = new TreeReader();
    Map<String, Object> doc = reader.object("", tree);
    if (doc == null) {
      throw reader.failure();
    }
    onlyKeys(reader, "", doc, TOP);
    String listen = null;
    if (doc.get("listen") == null) {
      reader.problem("listen", "is required (HOST:PORT)");
    } else {
      listen = reader.string("listen", doc.get("listen"));
    }
    AllowList allow = AllowList.EMPTY;
    if (doc.get("allow") == null) {
      reader.problem("allow", "is required (a list of entries; [] refuses everything)");
    } else {
      allow = reader.allowList("allow", doc.get("allow"));
    }
    Optional<AllowList> instanceAllow =
        Optional.ofNullable(doc.get("instance_allow"))
            .map(value -> reader.allowList("instance_allow", value));
    List<InternalRule> internal = internal(reader, doc.get("internal"));
    Optional<Map<String, List<String>>> hosts =
        Optional.ofNullable(doc.get("hosts")).map(value -> hosts(reader, value));
    Optional<String> dnsServer = optionalString(reader, doc, "dns_server");
    Optional<String> runId = optionalString(reader, doc, "run_id");
    Optional<String> decisions = optionalString(reader, doc, "decisions");
    Optional<String> metrics = optionalString(reader, doc, "metrics");
    ProxyPolicy.Limits limits = limits(reader, doc.get("limits"));
    Optional<InspectPolicy> inspect =
        doc.get("inspect") == null ? Optional.empty() : inspect(reader, doc.get("inspect"), allow);
    reader.throwIfAny();
    return new ProxyPolicy(
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
        inspect);
  }

  private static final Set<String> INSPECT =
      SandboxConfigReader.orderedSet("hosts", "ca_expires_at", "credentials_dir", "upstream_ca");

  private static Optional<InspectPolicy> inspect(TreeReader reader, Object value, AllowList allow) {
    Map<String, Object> tree = reader.object("inspect", value);
    if (tree == null) {
      return Optional.empty();
    }
    onlyKeys(reader, "inspect", tree, INSPECT);
    java.util.TreeMap<String, InspectedHost> hosts =
        InspectReader.hosts(
            reader, "inspect.hosts", tree.get("hosts"), Optional.of(allow), Optional.empty());
    boolean ok = true;
    if (tree.get("hosts") == null
        || (hosts.isEmpty() && tree.get("hosts") instanceof Map<?, ?> m && m.isEmpty())) {
      reader.problem(
          "inspect.hosts", "is required (at least one host; leave inspect out for none)");
      ok = false;
    }
    java.time.Instant expires = null;
    String expiresText =
        tree.get("ca_expires_at") == null
            ? null
            : reader.string("inspect.ca_expires_at", tree.get("ca_expires_at"));
    if (expiresText == null) {
      if (tree.get("ca_expires_at") == null) {
        reader.problem(
            "inspect.ca_expires_at", "is required (when the run ends, as 2026-12-01T10:15:00Z)");
      }
      ok = false;
    } else {
      try {
        expires = java.time.Instant.parse(expiresText);
      } catch (java.time.format.DateTimeParseException e) {
        reader.problem(
            "inspect.ca_expires_at",
            "'"
                + TreeReader.echo(expiresText)
                + "' is not an instant (such as 2026-12-01T10:15:00Z)");
        ok = false;
      }
    }
    Optional<String> credentialsDir =
        optionalString(reader, tree, "credentials_dir", "inspect.credentials_dir");
    if (credentialsDir.isPresent() && !credentialsDir.get().startsWith("/")) {
      reader.problem("inspect.credentials_dir", "must be an absolute path");
      ok = false;
    }
    if (credentialsDir.isEmpty() && hosts.values().stream().anyMatch(h -> h.inject().isPresent())) {
      reader.problem(
          "inspect.credentials_dir",
          "is required when a host injects a credential (the folder its value is read from)");
      ok = false;
    }
    Optional<String> upstreamCa =
        optionalString(reader, tree, "upstream_ca", "inspect.upstream_ca");
    if (upstreamCa.isPresent()
        && (upstreamCa.get().length() > InspectPolicy.MAX_UPSTREAM_CA
            || !upstreamCa.get().contains("-----BEGIN CERTIFICATE-----"))) {
      reader.problem(
          "inspect.upstream_ca",
          "must be PEM certificates (-----BEGIN CERTIFICATE-----), at most "
              + InspectPolicy.MAX_UPSTREAM_CA
              + " characters");
      ok = false;
    }
    if (!ok || hosts.isEmpty()) {
      return Optional.empty();
    }
    return Optional.of(
        new InspectPolicy(List.copyOf(hosts.values()), expires, credentialsDir, upstreamCa));
  }

  private static Optional<String> optionalString(
      TreeReader reader, Map<String, Object> tree, String key, String path) {
    Object value = tree.get(key);
    return value == null ? Optional.empty() : Optional.ofNullable(reader.string(path, value));
  }

  /** Unknown fields named as such, so a misspelling reads as one. */
  private static void onlyKeys(
      TreeReader reader, String path, Map<String, Object> object, Set<String> known) {
    for (String key : object.keySet()) {
      if (!known.contains(key)) {
        reader.problem(
            TreeReader.field(path, key),
            "unknown field '"
                + TreeReader.echo(key)
                + "' (known: "
                + String.join(", ", known)
                + ")");
      }
    }
  }

  private static Optional<String> optionalString(
      TreeReader reader, Map<String, Object> doc, String key) {
    Object value = doc.get(key);
    return value == null ? Optional.empty() : Optional.ofNullable(reader.string(key, value));
  }

  private static List<InternalRule> internal(TreeReader reader, Object value) {
    List<InternalRule> rules = new ArrayList<>();
    if (value == null) {
      return rules;
    }
    if (!(value instanceof List<?> list)) {
      reader.problem("internal", "must be a list of destinations, not " + TreeReader.kind(value));
      return rules;
    }
    for (int i = 0; i < list.size(); i++) {
      String path = TreeReader.index("internal", i);
      Map<String, Object> tree = reader.object(path, list.get(i));
      if (tree == null) {
        continue;
      }
      onlyKeys(reader, path, tree, INTERNAL);
      List<Integer> ports =
          SandboxConfigReader.requiredPorts(reader, TreeReader.field(path, "ports"), tree);
      String cidr =
          tree.get("cidr") == null ? null : reader.string(path + ".cidr", tree.get("cidr"));
      String host =
          tree.get("host") == null ? null : reader.string(path + ".host", tree.get("host"));
      if ((cidr == null) == (host == null)) {
        reader.problem(path, "names a cidr or a host (exactly one)");
        continue;
      }
      if (ports == null) {
        continue;
      }
      try {
        rules.add(
            cidr != null
                ? InternalRule.range(Cidr.parse(cidr), ports)
                : InternalRule.host(host, ports));
      } catch (IllegalArgumentException e) {
        reader.problem(path, e.getMessage());
      }
    }
    return rules;
  }

  private static Map<String, List<String>> hosts(TreeReader reader, Object value) {
    Map<String, Object> table = reader.object("hosts", value);
    Map<String, List<String>> hosts = new LinkedHashMap<>();
    if (table != null) {
      table.forEach(
          (name, addresses) ->
              hosts.put(name, strings(reader, TreeReader.field("hosts", name), addresses)));
    }
    return hosts;
  }

  private static List<String> strings(TreeReader reader, String path, Object value) {
    List<String> out = new ArrayList<>();
    if (value == null) {
      return out;
    }
    if (!(value instanceof List<?> list)) {
      reader.problem(path, "must be a list of strings, not " + TreeReader.kind(value));
      return out;
    }
    for (int i = 0; i < list.size(); i++) {
      String text = reader.string(TreeReader.index(path, i), list.get(i));
      if (text != null) {
        out.add(text);
      }
    }
    return out;
  }

  private static ProxyPolicy.Limits limits(TreeReader reader, Object value) {
    if (value == null) {
      return ProxyPolicy.Limits.DEFAULTS;
    }
    Map<String, Object> tree = reader.object("limits", value);
    if (tree == null) {
      return ProxyPolicy.Limits.DEFAULTS;
    }
    onlyKeys(reader, "limits", tree, LIMITS);
    return new ProxyPolicy.Limits(
        positive(reader, tree, "connect_timeout_ms"),
        positive(reader, tree, "dns_timeout_ms"),
        positive(reader, tree, "idle_timeout_ms"),
        positive(reader, tree, "max_lifetime_ms"),
        positive(reader, tree, "max_connections"),
        positive(reader, tree, "max_header_bytes"),
        positive(reader, tree, "io_threads"));
  }

  private static OptionalInt positive(TreeReader reader, Map<String, Object> tree, String key) {
    Object value = tree.get(key);
    if (value == null) {
      return OptionalInt.empty();
    }
    int number =
        reader.wholeNumber(TreeReader.field("limits", key), value, 0, 1, Integer.MAX_VALUE);
    return number < 1 ? OptionalInt.empty() : OptionalInt.of(number);
  }
}
