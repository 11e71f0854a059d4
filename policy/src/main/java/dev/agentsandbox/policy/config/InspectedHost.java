package dev.agentsandbox.policy.config;

import dev.agentsandbox.policy.HostName;
import dev.agentsandbox.policy.http.RequestRules;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * An allow-list host whose TLS the proxy terminates, with the run's own CA, so that it can apply
 * method and path rules to each request and set a credential the workload never holds. Every other
 * host stays an opaque tunnel. Immutable and thread-safe.
 *
 * @param host the exact canonical host name (never a wildcard: the CA would sign for, and the
 *     credential go to, every name under it)
 * @param rules what requests are allowed; empty means every request (inspected only to inject)
 * @param inject the credential set as a header on every request to this host, if any
 */
public record InspectedHost(String host, Optional<RequestRules> rules, Optional<Injection> inject) {
  /** The most hosts one agent's runs may inspect. */
  public static final int MAX_PER_AGENT = 32;

  public InspectedHost {
    Objects.requireNonNull(host, "host");
    if (!HostName.canonicalTargetHost(host).equals(host)) {
      throw new IllegalArgumentException("host is not canonical: " + host);
    }
    Objects.requireNonNull(rules, "rules");
    Objects.requireNonNull(inject, "inject");
  }

  /** The entry as a document writes it, every default written out. */
  Map<String, Object> toTree() {
    Map<String, Object> tree = new LinkedHashMap<>();
    rules.ifPresent(r -> tree.put("rules", r.asStrings()));
    inject.ifPresent(
        i -> {
          tree.put("credential", i.credential());
          tree.put("header", i.header());
          tree.put("template", i.template());
        });
    return tree;
  }
}
