package dev.agentsandbox.policy.evidence;

import java.util.Objects;
import java.util.SortedSet;
import java.util.TreeSet;

/**
 * One host and port a change would open or close, with what the record holds of it.
 *
 * @param host the canonical host
 * @param port the port
 * @param refusedAs for a refusal the change would allow: how it was refused; for a connection it
 *     would refuse: how the new version would refuse it ({@code not-allowed}, {@code
 *     port-not-allowed}, {@code instance-policy}, or {@link EgressImpact#AGENT_NOT_LISTED})
 * @param evidence refusals or connections, runs, first and last seen, example runs
 */
public record ImpactHost(String host, int port, SortedSet<String> refusedAs, Evidence evidence) {
  public ImpactHost {
    Objects.requireNonNull(host, "host");
    refusedAs = new TreeSet<>(refusedAs);
    Objects.requireNonNull(evidence, "evidence");
  }
}
