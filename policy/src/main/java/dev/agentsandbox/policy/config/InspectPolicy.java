package dev.agentsandbox.policy.config;

import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * The part of a proxy's policy document that names the hosts whose TLS it terminates ({@code
 * inspect}, docs/proxy.md): the proxy makes a CA for the run at start, name-constrained to exactly
 * these hosts and expiring at {@code caExpiresAt}, and keeps its key in memory only. Immutable.
 *
 * @param hosts the inspected hosts, each at most once
 * @param caExpiresAt when the run's CA and every certificate it signs expire: the run's end
 * @param credentialsDir the folder the proxy reads each injected credential's value from, one file
 *     per credential name (required when a host injects one); never the workload's folder
 * @param upstreamCa the PEM certificates the proxy verifies inspected hosts with instead of the
 *     system's trust store (an operator's own CA), if any
 */
public record InspectPolicy(
    List<InspectedHost> hosts,
    Instant caExpiresAt,
    Optional<String> credentialsDir,
    Optional<String> upstreamCa) {
  /** The largest {@code upstream_ca} a document may carry. */
  public static final int MAX_UPSTREAM_CA = 1024 * 1024;

  public InspectPolicy {
    hosts = List.copyOf(hosts);
    if (hosts.isEmpty()) {
      throw new IllegalArgumentException("an inspect section names at least one host");
    }
    if (hosts.stream().map(InspectedHost::host).distinct().count() != hosts.size()) {
      throw new IllegalArgumentException("an inspected host is named twice");
    }
    Objects.requireNonNull(caExpiresAt, "caExpiresAt");
    Objects.requireNonNull(credentialsDir, "credentialsDir");
    Objects.requireNonNull(upstreamCa, "upstreamCa");
    if (credentialsDir.isEmpty() && hosts.stream().anyMatch(h -> h.inject().isPresent())) {
      throw new IllegalArgumentException("an injected credential needs a credentials folder");
    }
  }

  /** The host's entry, if it is inspected. */
  public Optional<InspectedHost> host(String canonicalHost) {
    return hosts.stream().filter(h -> h.host().equals(canonicalHost)).findFirst();
  }

  Map<String, Object> toTree() {
    Map<String, Object> tree = new LinkedHashMap<>();
    Map<String, Object> entries = new LinkedHashMap<>();
    hosts.forEach(h -> entries.put(h.host(), h.toTree()));
    tree.put("hosts", entries);
    tree.put("ca_expires_at", caExpiresAt.toString());
    credentialsDir.ifPresent(dir -> tree.put("credentials_dir", dir));
    upstreamCa.ifPresent(pem -> tree.put("upstream_ca", pem));
    return tree;
  }
}
