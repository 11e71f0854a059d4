package dev.agentsandbox.policy.evidence;

import java.util.List;
import java.util.Objects;
import java.util.SortedSet;
import java.util.TreeSet;

/**
 * One allow-list entry a proposal adds, with the refusals it would have let through.
 *
 * @param entry the entry as an administrator writes it ({@code pypi.org}, {@code
 *     files.example.com:8443}, {@code *.cdn.example.com}); it reads back unchanged
 * @param hosts the refused names it covers, sorted (at most {@link #MAX_HOSTS})
 * @param hostsLeftOut how many more names it covers
 * @param ports the ports they were refused on
 * @param refusedAs how they were refused: {@code not-allowed} and/or {@code port-not-allowed}
 * @param evidence counts, runs, first and last seen, example runs
 * @param instancePolicyBlocks the {@code host:port} pairs among them that the instance egress
 *     policy would still refuse with the entry added (at most {@link #MAX_HOSTS}); empty when none
 */
public record ProposedEntry(
    String entry,
    List<String> hosts,
    int hostsLeftOut,
    SortedSet<Integer> ports,
    SortedSet<String> refusedAs,
    Evidence evidence,
    List<String> instancePolicyBlocks) {
  /** How many names (and blocked pairs) a proposed entry lists. */
  public static final int MAX_HOSTS = 50;

  public ProposedEntry {
    Objects.requireNonNull(entry, "entry");
    hosts = List.copyOf(hosts);
    ports = new TreeSet<>(ports);
    refusedAs = new TreeSet<>(refusedAs);
    Objects.requireNonNull(evidence, "evidence");
    instancePolicyBlocks = List.copyOf(instancePolicyBlocks);
  }

  /** Whether the instance egress policy would still refuse some of what the entry is for. */
  public boolean blockedByInstancePolicy() {
    return !instancePolicyBlocks.isEmpty();
  }
}
