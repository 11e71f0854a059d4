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

  private static final class CandidateTally {
    final EvidenceTally evidence = new EvidenceTally();
    final SortedSet<Integer> ports = new TreeSet<>();
    final SortedSet<String> reasons = new TreeSet<>();
  }

  /**
   * The proposal for {@code agent} from its refusals ({@link EgressObservation.Kind#DENY}; allowed
   * connections are ignored).
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
    Map<GroupKey, EvidenceTally> groups = new HashMap<>();
    long read = 0;
    for (EgressObservation observation : observations) {
      if (observation.kind() != EgressObservation.Kind.DENY) {
        continue;
      }
      read += observation.count();
      groups
          .computeIfAbsent(
              new GroupKey(observation.host(), observation.port(), observation.reason()),
              k -> new EvidenceTally())
          .add(observation);
    }
    List<NotFixable> notFixable = new ArrayList<>();
    List<RefusalGroup> nowAllowed = new ArrayList<>();
    Map<Candidate, CandidateTally> candidates = new TreeMap<>(CANDIDATE_ORDER);
    for (Map.Entry<GroupKey, EvidenceTally> group : groups.entrySet()) {
      GroupKey key = group.getKey();
      RefusalGroup refusals =
          new RefusalGroup(key.host(), key.port(), key.reason(), group.getValue().evidence());
      switch (Refusals.standing(key.host(), key.port(), key.reason(), now)) {
        case Refusals.Standing.Stays stays -> notFixable.add(new NotFixable(refusals, stays.why()));
        case Refusals.Standing.NowAllowed allowed -> nowAllowed.add(refusals);
        case Refusals.Standing.Fixable fixable -> {
          int portClass = key.port() == 80 || key.port() == 443 ? 0 : key.port();
          CandidateTally tally =
              candidates.computeIfAbsent(
                  new Candidate(key.host(), portClass), k -> new CandidateTally());
          tally.evidence.addAll(group.getValue());
          tally.ports.add(key.port());
          tally.reasons.add(key.reason());
        }
      }
    }
    List<ProposedEntry> entries = entries(candidates, rule);
    int entriesLeftOut = Math.max(0, entries.size() - MAX_ENTRIES);
    entries = new ArrayList<>(entries.subList(0, Math.min(entries.size(), MAX_ENTRIES)));
    SandboxConfig after = readBack(agent, config, settings, entries, notFixable);
    AllowList allowAfter = after.agents().get(agent).allow();
    notFixable.sort(
        Comparator.comparing((NotFixable n) -> n.refusals(), GROUP_ORDER)
            .thenComparing(n -> n.why().wireName()));
    nowAllowed.sort(GROUP_ORDER);
    return new EgressProposal(
        agent,
        read,
        entries,
        entriesLeftOut,
        notFixable.subList(0, Math.min(notFixable.size(), MAX_GROUPS)),
        Math.max(0, notFixable.size() - MAX_GROUPS),
        nowAllowed.subList(0, Math.min(nowAllowed.size(), MAX_GROUPS)),
        Math.max(0, nowAllowed.size() - MAX_GROUPS),
        allowAfter,
        Loosenings.between(config, after));
  }

  private static final Comparator<Candidate> CANDIDATE_ORDER =
      Comparator.comparing(Candidate::host).thenComparingInt(Candidate::portClass);

  private static final Comparator<RefusalGroup> GROUP_ORDER =
      Comparator.comparingLong((RefusalGroup g) -> g.evidence().count())
          .reversed()
          .thenComparing(RefusalGroup::host)
          .thenComparingInt(RefusalGroup::port)
          .thenComparing(RefusalGroup::reason);

  /** Wildcards where several names earn one, exact entries for the rest, best evidenced first. */
  private static List<ProposedEntry> entries(
      Map<Candidate, CandidateTally> candidates, ScopeRule rule) {
    Map<Integer, List<Candidate>> byPortClass = new TreeMap<>();
    candidates
        .keySet()
        .forEach(c -> byPortClass.computeIfAbsent(c.portClass(), k -> new ArrayList<>()).add(c));
    List<ProposedEntry> entries = new ArrayList<>();
    for (Map.Entry<Integer, List<Candidate>> portClass : byPortClass.entrySet()) {
      int port = portClass.getKey();
      Map<String, Candidate> byHost = new LinkedHashMap<>();
      portClass.getValue().forEach(c -> byHost.put(c.host(), c));
      for (Wildcards.Cover cover : Wildcards.plan(byHost.keySet())) {
        List<Candidate> covered = cover.names().stream().map(byHost::remove).toList();
        entries.add(entry(new AllowEntry(true, cover.suffix(), port), covered, candidates, rule));
      }
      for (Candidate exact : byHost.values()) {
        entries.add(
            entry(new AllowEntry(false, exact.host(), port), List.of(exact), candidates, rule));
      }
    }
    entries.sort(
        Comparator.comparingInt((ProposedEntry e) -> e.evidence().runs())
            .reversed()
            .thenComparing(e -> e.evidence().count(), Comparator.reverseOrder())
            .thenComparing(ProposedEntry::entry));
    return entries;
  }

  private static ProposedEntry entry(
      AllowEntry entry,
      List<Candidate> covered,
      Map<Candidate, CandidateTally> candidates,
      ScopeRule rule) {
    EvidenceTally evidence = new EvidenceTally();
    SortedSet<Integer> ports = new TreeSet<>();
    SortedSet<String> reasons = new TreeSet<>();
    List<String> blocked = new ArrayList<>();
    for (Candidate candidate : covered) {
      CandidateTally tally = candidates.get(candidate);
      evidence.addAll(tally.evidence);
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
        evidence.evidence(),
        blocked);
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
