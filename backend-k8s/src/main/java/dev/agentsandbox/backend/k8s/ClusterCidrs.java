package dev.agentsandbox.backend.k8s;

import dev.agentsandbox.policy.net.Cidr;
import java.util.List;
import java.util.Objects;

/** Node and API server address ranges, as an operator configures them. */
final class ClusterCidrs {
  private ClusterCidrs() {}

  /** The ranges in canonical form ({@code 10.0.0.0/8}); refuses what is not a CIDR. */
  static List<String> parse(String what, List<String> texts) {
    Objects.requireNonNull(texts, what);
    return texts.stream()
        .map(
            text -> {
              try {
                return Cidr.parse(text).toString();
              } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(
                    what + ": '" + text + "' is not a CIDR such as 10.0.0.0/16 or 203.0.113.7/32",
                    e);
              }
            })
        .distinct()
        .toList();
  }
}
