package dev.agentsandbox.policy.config;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.SortedSet;
import java.util.TreeSet;

/**
 * Which agents an API token may see and touch: every agent, or only the named ones
 * (docs/architecture.md invariant 13: a token limited to some agents sees and touches nothing of
 * any other agent). A limited token's view of runs, plans, sessions and configuration is cut to its
 * agents; what it may not see is answered as if it did not exist. Immutable and thread-safe.
 *
 * @param agents the agents a limited grant names (sorted, at least one), or empty for every agent
 */
public record AgentGrant(Optional<SortedSet<String>> agents) {
  /** The most agents one token may be limited to. */
  public static final int MAX_AGENTS = 64;

  /** A token that is not limited: every agent. */
  public static final AgentGrant EVERY = new AgentGrant(Optional.empty());

  public AgentGrant {
    Objects.requireNonNull(agents, "agents");
    agents = agents.map(named -> Collections.unmodifiableSortedSet(new TreeSet<>(named)));
    agents.ifPresent(
        named -> {
          List<String> problems = problems(named);
          if (!problems.isEmpty()) {
            throw new IllegalArgumentException(String.join("; ", problems));
          }
        });
  }

  /**
   * A grant of exactly these agents.
   *
   * @throws IllegalArgumentException naming every bad name, or when there are none or too many
   */
  public static AgentGrant only(Collection<String> agents) {
    return new AgentGrant(Optional.of(new TreeSet<>(agents)));
  }

  /**
   * What is wrong with a list of agent names for a grant, each problem once; empty when it is good.
   * Names follow the configuration's agent grammar (1 to 63 lower-case letters, digits and inner
   * hyphens).
   */
  public static List<String> problems(Collection<String> agents) {
    List<String> problems = new ArrayList<>();
    if (agents.isEmpty()) {
      problems.add("a token limited to agents names at least one agent");
    }
    if (agents.size() > MAX_AGENTS) {
      problems.add(
          "a token may be limited to at most " + MAX_AGENTS + " agents, not " + agents.size());
    }
    for (String agent : new TreeSet<>(agents)) {
      if (agent == null || !TreeReader.NAME.matcher(agent).matches()) {
        problems.add(
            "'"
                + TreeReader.echo(String.valueOf(agent))
                + "' is not an agent name (1 to 63 lower-case letters, digits and inner hyphens)");
      }
    }
    return problems;
  }

  /** Whether the grant names agents rather than allowing every one. */
  public boolean limited() {
    return agents.isPresent();
  }

  /** Whether a token with this grant may see and touch {@code agent}'s runs and settings. */
  public boolean permits(String agent) {
    return agents.map(named -> agent != null && named.contains(agent)).orElse(true);
  }

  /** The agents a limited grant names; empty for {@link #EVERY}. */
  public SortedSet<String> named() {
    return agents.orElse(Collections.emptySortedSet());
  }

  /** The grant as the store keeps it: null for every agent, else the names separated by spaces. */
  public String storedForm() {
    return agents.map(named -> String.join(" ", named)).orElse(null);
  }

  /**
   * The grant the store's form says: only null is every agent (an empty or damaged form is refused,
   * never read as every agent).
   *
   * @throws IllegalArgumentException when the form holds no valid names
   */
  public static AgentGrant fromStoredForm(String stored) {
    if (stored == null) {
      return EVERY;
    }
    return only(List.of(stored.split(" ", -1)));
  }
}
