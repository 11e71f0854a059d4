package dev.agentsandbox.policy.evidence;

import dev.agentsandbox.policy.AllowEntry;
import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.config.AgentSettings;
import dev.agentsandbox.policy.config.ConfigProblem;
import dev.agentsandbox.policy.config.EgressPolicy;
import dev.agentsandbox.policy.config.InvalidConfigException;
import dev.agentsandbox.policy.config.Loosenings;
import dev.agentsandbox.policy.config.SandboxConfig;
import dev.agentsandbox.policy.config.ScopeRule;
import dev.agentsandbox.policy.net.EgressDecider;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Proposes allow-list entries from an agent's recorded refusals: the narrowest entries that would
 * have let the fixable ones through — exact names, {@code name:port} for ports other than 80 and
 * 443, and {@code *.suffix} only where {@link Wildcards} allows one — each with its evidence; the
 * rest listed apart with why they stay refused ({@link Refusals}). Every proposed entry is read
 * back through the configuration reader with the agent's whole document, so no row, however
 * hostile, yields an entry the reader would refuse.
 *
 * <p>Stateless and thread-safe.
 */
public final class EgressProposer {
  /** The most entries one proposal adds; the best evidenced are kept. */
  public static final int MAX_ENTRIES = 100;

  /** The most groups of refusals each of the other lists shows. */
  public static final int MAX_GROUPS = 100;

  private EgressProposer() {}

  private record GroupKey(String host, int port, String reason) {}

  /**
   * A fixable (host, port class): 0 stands for 80 and 443, which an entry without a port allows.
   */
  private record Candidate(String host, int portClass) {}

  /** Phase one's tally of a group: its count, no runs (those are counted per line in phase two). */
  private static final class Counts {
    final GroupKey key;
    long count;

    Counts(GroupKey key) {
      this.key = key;
    }

    /** The line the group's observations are tallied into, once decided; null when none shows. */
    Line line;

    void add(long more) {
      long sum = count + more;
      count = sum < 0 ? Long.MAX_VALUE : sum;
    }
  }

  private static final class CandidateTally {
    final List<Counts> groups = new ArrayList<>();
    final SortedSet<Integer> ports = new TreeSet<>();
    final SortedSet<String> reasons = new TreeSet<>();
  }

  /** An output line in the making: what it stands for, and the evidence phase two tallies. */
  private static final class Line {
    final EvidenceTally evidence = new EvidenceTally();
  }

  /**
   * The proposal for {@code agent} from its refusals ({@link EgressObservation.Kind#DENY}; allowed
   * connections are ignored).
   *
   * <p>Two passes over the refusals: the first counts each (host, port, reason) group and decides
   * what it becomes (an entry, a refusal no entry fixes, one allowed now); the second tallies each
   * output line's evidence (runs, first and last seen, example runs) straight from the
   * observations, each through the group the first pass found for it, so nothing is merged or
   * looked up twice.
   *
   * @throws IllegalArgumentException when {@code config} does not configure {@code agent}
   */
  public static EgressProposal propose(
      String agent,
      SandboxConfig config,
      EgressPolicy policy,
      Iterable<EgressObservation> observations) {
    AgentSettings settings = config.agents().get(agent);
    if (settings == null) {
      throw new IllegalArgumentException("agent " + agent + " is not configured");
    }
    ScopeRule rule = policy.ruleFor(settings.scope());
    EgressDecider now = new EgressDecider(settings.allow(), rule.allow());
    Map<GroupKey, Counts> groups = new HashMap<>();
    List<EgressObservation> denials = new ArrayList<>();
    List<Counts> groupOf = new ArrayList<>();
    long read = 0;
    for (EgressObservation observation : observations) {
      if (observation.kind() == EgressObservation.Kind.DENY) {
        long sum = read + observation.count();
        read = sum < 0 ? Long.MAX_VALUE : sum;
        Counts counts = groups.computeIfAbsent(key(observation), Counts::new);
        counts.add(observation.count());
        denials.add(observation);
        groupOf.add(counts);
      }
    }
    List<Map.Entry<Counts, NotFixable.Why>> stays = new ArrayList<>();
    List<Counts> allowedNow = new ArrayList<>();
    Map<Candidate, CandidateTally> candidates = new HashMap<>();
    for (Counts group : groups.values()) {
      GroupKey key = group.key;
      switch (Refusals.standing(key.host(), key.port(), key.reason(), now)) {
        case Refusals.Standing.Stays stay -> stays.add(Map.entry(group, stay.why()));
        case Refusals.Standing.NowAllowed allowed -> allowedNow.add(group);
        case Refusals.Standing.Fixable fixable -> {
          int portClass = key.port() == 80 || key.port() == 443 ? 0 : key.port();
          CandidateTally tally =
              candidates.computeIfAbsent(
                  new Candidate(key.host(), portClass), k -> new CandidateTally());
          tally.groups.add(group);
          tally.ports.add(key.port());
          tally.reasons.add(key.reason());
        }
      }
    }
    stays.sort(Map.Entry.comparingByKey(MOST_REFUSED));
    allowedNow.sort(MOST_REFUSED);
    // Phase two: every line the answer can show gets its evidence from one more pass.
    List<Planned> planned = plan(candidates);
    List<Map.Entry<Counts, NotFixable.Why>> shownStays =
        stays.subList(0, Math.min(stays.size(), MAX_GROUPS));
    shownStays.forEach(stay -> stay.getKey().line = new Line());
    List<Counts> shownAllowed = allowedNow.subList(0, Math.min(allowedNow.size(), MAX_GROUPS));
    shownAllowed.forEach(group -> group.line = new Line());
    for (int i = 0; i < denials.size(); i++) {
      Line line = groupOf.get(i).line;
      if (line != null) {
        line.evidence.add(denials.get(i));
      }
    }
    List<ProposedEntry> entries = new ArrayList<>();
    for (Planned entry : planned) {
      entries.add(entry.toEntry(candidates, rule));
    }
    entries.sort(
        Comparator.comparingInt((ProposedEntry e) -> e.evidence().runs())
            .reversed()
            .thenComparing(e -> e.evidence().count(), Comparator.reverseOrder())
            .thenComparing(ProposedEntry::entry));
    int entriesLeftOut = Math.max(0, entries.size() - MAX_ENTRIES);
    entries = new ArrayList<>(entries.subList(0, Math.min(entries.size(), MAX_ENTRIES)));
    List<NotFixable> notFixable = new ArrayList<>();
    for (Map.Entry<Counts, NotFixable.Why> stay : shownStays) {
      notFixable.add(new NotFixable(group(stay.getKey()), stay.getValue()));
    }
    List<RefusalGroup> nowAllowed = shownAllowed.stream().map(EgressProposer::group).toList();
    int notFixableLeftOut = stays.size() - shownStays.size();
    SandboxConfig after = readBack(agent, config, settings, entries, notFixable);
    return new EgressProposal(
        agent,
        read,
        entries,
        entriesLeftOut,
        notFixable,
        notFixableLeftOut,
        nowAllowed,
        allowedNow.size() - shownAllowed.size(),
        after.agents().get(agent).allow(),
        Loosenings.between(config, after));
  }

  private static GroupKey key(EgressObservation observation) {
    return new GroupKey(observation.host(), observation.port(), observation.reason());
  }

  private static RefusalGroup group(Counts group) {
    GroupKey key = group.key;
    return new RefusalGroup(key.host(), key.port(), key.reason(), group.line.evidence.evidence());
  }

  /**
   * The most refused first, then by host, port and reason, so the order never depends on hashing.
   */
  private static final Comparator<Counts> MOST_REFUSED =
      Comparator.comparingLong((Counts c) -> -c.count)
          .thenComparing(c -> c.key.host())
          .thenComparingInt(c -> c.key.port())
          .thenComparing(c -> c.key.reason());

  private static final Comparator<Candidate> CANDIDATE_ORDER =
      Comparator.comparing(Candidate::host).thenComparingInt(Candidate::portClass);

  /** An entry decided in phase one, whose evidence phase two tallies in {@code line}. */
  private record Planned(AllowEntry entry, List<Candidate> covered, Line line) {
    ProposedEntry toEntry(Map<Candidate, CandidateTally> candidates, ScopeRule rule) {
      SortedSet<Integer> ports = new TreeSet<>();
      SortedSet<String> reasons = new TreeSet<>();
      List<String> blocked = new ArrayList<>();
      for (Candidate candidate : covered) {
        CandidateTally tally = candidates.get(candidate);
        ports.addAll(tally.ports);
        reasons.addAll(tally.reasons);
        for (int port : tally.ports) {
          boolean instanceAllows =
              rule.allow()
                  .map(list -> list.evaluate(candidate.host(), port) == AllowList.Verdict.ALLOWED)
                  .orElse(true);
          if (!instanceAllows && blocked.size() < ProposedEntry.MAX_HOSTS) {
            blocked.add(candidate.host() + ":" + port);
          }
        }
      }
      List<String> hosts = covered.stream().map(Candidate::host).sorted().toList();
      return new ProposedEntry(
          entry.toString(),
          hosts.subList(0, Math.min(hosts.size(), ProposedEntry.MAX_HOSTS)),
          Math.max(0, hosts.size() - ProposedEntry.MAX_HOSTS),
          ports,
          reasons,
          line.evidence.evidence(),
          blocked);
    }
  }

  /** Wildcards where several names earn one, exact entries for the rest; each with its line. */
  private static List<Planned> plan(Map<Candidate, CandidateTally> candidates) {
    List<Candidate> sorted = new ArrayList<>(candidates.keySet());
    sorted.sort(CANDIDATE_ORDER);
    Map<Integer, List<Candidate>> byPortClass = new TreeMap<>();
    sorted.forEach(c -> byPortClass.computeIfAbsent(c.portClass(), k -> new ArrayList<>()).add(c));
    List<Planned> planned = new ArrayList<>();
    for (Map.Entry<Integer, List<Candidate>> portClass : byPortClass.entrySet()) {
      int port = portClass.getKey();
      Map<String, Candidate> byHost = new LinkedHashMap<>();
      portClass.getValue().forEach(c -> byHost.put(c.host(), c));
      for (Wildcards.Cover cover : Wildcards.plan(byHost.keySet())) {
        List<Candidate> covered = cover.names().stream().map(byHost::remove).toList();
        planned.add(planned(new AllowEntry(true, cover.suffix(), port), covered, candidates));
      }
      for (Candidate exact : byHost.values()) {
        planned.add(planned(new AllowEntry(false, exact.host(), port), List.of(exact), candidates));
      }
    }
    return planned;
  }

  private static Planned planned(
      AllowEntry entry, List<Candidate> covered, Map<Candidate, CandidateTally> candidates) {
    Line line = new Line();
    for (Candidate candidate : covered) {
      candidates.get(candidate).groups.forEach(group -> group.line = line);
    }
    return new Planned(entry, covered, line);
  }

  /**
   * The configuration with the entries added to the agent's list, read back through {@link
   * SandboxConfig#read}: an entry the reader refuses leaves the proposal for {@code notFixable}
   * (removed from {@code entries}), and the rest are read again. Each round removes at least one
   * entry, so this ends.
   */
  private static SandboxConfig readBack(
      String agent,
      SandboxConfig config,
      AgentSettings settings,
      List<ProposedEntry> entries,
      List<NotFixable> notFixable) {
    String prefix = "agents." + agent + ".allow[";
    int existing = settings.allow().entries().size();
    while (true) {
      List<String> allow = new ArrayList<>(settings.allow().asStrings());
      entries.forEach(e -> allow.add(e.entry()));
      Map<String, Object> tree = config.toTree();
      @SuppressWarnings("unchecked")
      Map<String, Object> agents = (Map<String, Object>) tree.get("agents");
      @SuppressWarnings("unchecked")
      Map<String, Object> agentTree = new LinkedHashMap<>((Map<String, Object>) agents.get(agent));
      agentTree.put("allow", allow);
      agents.put(agent, agentTree);
      try {
        SandboxConfig after = SandboxConfig.read(tree);
        if (!after.agents().get(agent).allow().asStrings().equals(allow)) {
          throw new IllegalStateException("the reader rewrote a proposed entry of " + agent);
        }
        return after;
      } catch (InvalidConfigException refused) {
        Set<Integer> bad = new TreeSet<>(Comparator.reverseOrder());
        for (ConfigProblem problem : refused.problems()) {
          int index = indexOf(problem.path(), prefix) - existing;
          if (index < 0 || index >= entries.size()) {
            // Not one of ours: the current document itself does not read, which it always does.
            throw new IllegalStateException("the configuration does not read back", refused);
          }
          bad.add(index);
        }
        for (int index : bad) {
          ProposedEntry dropped = entries.remove(index);
          notFixable.add(
              new NotFixable(
                  new RefusalGroup(
                      dropped.hosts().size() == 1 ? dropped.hosts().get(0) : dropped.entry(),
                      dropped.ports().first(),
                      dropped.refusedAs().first(),
                      dropped.evidence()),
                  NotFixable.Why.READER_REFUSED));
        }
      }
    }
  }

  private static int indexOf(String path, String prefix) {
    if (!path.startsWith(prefix) || !path.endsWith("]")) {
      return -1;
    }
    try {
      return Integer.parseInt(path.substring(prefix.length(), path.length() - 1));
    } catch (NumberFormatException e) {
      return -1;
    }
  }
}
