package dev.agentsandbox.policy.evidence;

import dev.agentsandbox.policy.net.EgressDecider;
import dev.agentsandbox.policy.net.Reason;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeSet;

/**
 * The impact of a change on what the record holds: each observation decided by the proxy's own
 * function ({@link EgressDecider}, nothing resolved) under the current lists and under the new
 * ones. A refusal the current lists refuse and the new ones allow is a loosening's effect; an
 * allowed connection the current lists allow and the new ones refuse is a tightening's ("this would
 * have broken 37 runs"). Observations the change does not move (already allowed, still refused,
 * refused for reasons after the lists) count for neither.
 *
 * <p>Allowed connections are recorded once per host and run (the first), so a tightening counts
 * runs and hosts, never every connection. Stateless and thread-safe.
 */
public final class EgressImpact {
  /** How the new version refuses every connection of an agent it no longer configures. */
  public static final String AGENT_NOT_LISTED = "agent-not-listed";

  /** The most host and port pairs one direction lists. */
  public static final int MAX_HOSTS = 50;

  private static final String ALLOWED = Reason.ALLOWED.wireName();

  /** The refusals the allow-lists decide: the only ones another version of them can change. */
  private static final Set<String> LIST_REASONS =
      Set.of(
          Reason.NOT_ALLOWED.wireName(),
          Reason.PORT_NOT_ALLOWED.wireName(),
          Reason.INSTANCE_POLICY.wireName());

  private EgressImpact() {}

  /** The agents whose lists differ between two versions, added and removed agents included. */
  public static SortedSet<String> changedAgents(
      Map<String, AgentEgress> before, Map<String, AgentEgress> after) {
    SortedSet<String> names = new TreeSet<>(before.keySet());
    names.addAll(after.keySet());
    names.removeIf(name -> Objects.equals(before.get(name), after.get(name)));
    return names;
  }

  private record HostPort(String host, int port) {}

  private static final class Side {
    final Map<HostPort, EvidenceTally> tallies = new HashMap<>();
    final Map<HostPort, SortedSet<String>> reasons = new HashMap<>();
    final Set<String> runs = new HashSet<>();
    long events;

    void add(HostPort key, EgressObservation observation, String reason) {
      tallies.computeIfAbsent(key, k -> new EvidenceTally()).add(observation);
      reasons.computeIfAbsent(key, k -> new TreeSet<>()).add(reason);
      if (observation.runId() != null) {
        runs.add(observation.runId());
      }
      long sum = events + observation.count();
      events = sum < 0 ? Long.MAX_VALUE : sum;
    }

    ImpactSide result() {
      if (tallies.isEmpty()) {
        return ImpactSide.NONE;
      }
      List<ImpactHost> top =
          tallies.entrySet().stream()
              .map(
                  e ->
                      new ImpactHost(
                          e.getKey().host(),
                          e.getKey().port(),
                          reasons.get(e.getKey()),
                          e.getValue().evidence()))
              .sorted(
                  Comparator.comparingInt((ImpactHost h) -> h.evidence().runs())
                      .reversed()
                      .thenComparing(h -> h.evidence().count(), Comparator.reverseOrder())
                      .thenComparing(ImpactHost::host)
                      .thenComparingInt(ImpactHost::port))
              .limit(MAX_HOSTS)
              .toList();
      return new ImpactSide(events, runs.size(), tallies.size(), top);
    }
  }

  /** One side's decisions, each (host, port) decided once. */
  private static final class Decisions {
    private final EgressDecider decider;
    private final Map<HostPort, String> cache = new HashMap<>();

    Decisions(Optional<AgentEgress> lists) {
      this.decider = lists.map(AgentEgress::decider).orElse(null);
    }

    String decide(HostPort key) {
      if (decider == null) {
        return AGENT_NOT_LISTED;
      }
      return cache.computeIfAbsent(
          key, k -> decider.decide(k.host(), k.port()).reason().wireName());
    }
  }

  /**
   * What the change from {@code before} to {@code after} would have done to {@code agent}'s
   * recorded egress; an empty side is an agent not configured there, whose runs are refused.
   */
  public static AgentImpact of(
      String agent,
      Optional<AgentEgress> before,
      Optional<AgentEgress> after,
      Iterable<EgressObservation> observations) {
    Decisions was = new Decisions(before);
    Decisions is = new Decisions(after);
    Side opened = new Side();
    Side closed = new Side();
    for (EgressObservation observation : observations) {
      HostPort key = new HostPort(observation.host(), observation.port());
      switch (observation.kind()) {
        case DENY -> {
          if (LIST_REASONS.contains(observation.reason())
              && !was.decide(key).equals(ALLOWED)
              && is.decide(key).equals(ALLOWED)) {
            opened.add(key, observation, observation.reason());
          }
        }
        case ALLOW -> {
          if (was.decide(key).equals(ALLOWED)) {
            String now = is.decide(key);
            if (!now.equals(ALLOWED)) {
              closed.add(key, observation, now);
            }
          }
        }
      }
    }
    return new AgentImpact(agent, opened.result(), closed.result());
  }
}
