package dev.agentsandbox.server.evidence;

import dev.agentsandbox.policy.evidence.AgentImpact;
import dev.agentsandbox.policy.evidence.EgressProposal;
import dev.agentsandbox.policy.evidence.Evidence;
import dev.agentsandbox.policy.evidence.ImpactHost;
import dev.agentsandbox.policy.evidence.ImpactSide;
import dev.agentsandbox.policy.evidence.NotFixable;
import dev.agentsandbox.policy.evidence.ProposedEntry;
import dev.agentsandbox.policy.evidence.RefusalGroup;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Proposals and impacts as the API's JSON (field names and order are the contract, docs/api.md),
 * and an impact's counts as the {@code agent_sandbox.config.update} row records them. No value is
 * null, so the maps also serve as error details.
 */
public final class EvidenceJson {
  private EvidenceJson() {}

  /**
   * {@code GET .../agents/{agent}/egress-proposal}'s answer, without the version fields and the
   * loosenings (which the configuration endpoints render).
   */
  public static Map<String, Object> proposal(
      EgressProposal proposal, EvidenceWindow window, List<String> allowBefore) {
    Map<String, Object> json = new LinkedHashMap<>();
    json.put("agent", proposal.agent());
    json.put("since", window.since().toString());
    json.put("until", window.until().toString());
    json.put("refusals_read", proposal.refusalsRead());
    json.put("entries", proposal.entries().stream().map(EvidenceJson::entry).toList());
    json.put("entries_left_out", proposal.entriesLeftOut());
    json.put("not_fixable", proposal.notFixable().stream().map(EvidenceJson::notFixable).toList());
    json.put("not_fixable_left_out", proposal.notFixableLeftOut());
    json.put("now_allowed", proposal.nowAllowed().stream().map(EvidenceJson::group).toList());
    json.put("now_allowed_left_out", proposal.nowAllowedLeftOut());
    json.put("allow", allowBefore);
    json.put("allow_after", proposal.allowAfter().asStrings());
    return json;
  }

  private static Map<String, Object> entry(ProposedEntry entry) {
    Map<String, Object> json = new LinkedHashMap<>();
    json.put("entry", entry.entry());
    json.put("hosts", entry.hosts());
    json.put("hosts_left_out", entry.hostsLeftOut());
    json.put("ports", List.copyOf(entry.ports()));
    json.put("refused_as", List.copyOf(entry.refusedAs()));
    evidence(json, "refusals", entry.evidence());
    json.put("blocked_by_instance_policy", entry.blockedByInstancePolicy());
    json.put("instance_policy_blocks", entry.instancePolicyBlocks());
    return json;
  }

  private static Map<String, Object> notFixable(NotFixable notFixable) {
    Map<String, Object> json = group(notFixable.refusals());
    json.put("why", notFixable.why().wireName());
    json.put("detail", notFixable.why().sentence());
    return json;
  }

  private static Map<String, Object> group(RefusalGroup group) {
    Map<String, Object> json = new LinkedHashMap<>();
    json.put("host", group.host());
    json.put("port", group.port());
    json.put("reason", group.reason());
    evidence(json, "refusals", group.evidence());
    return json;
  }

  private static void evidence(Map<String, Object> json, String countName, Evidence evidence) {
    json.put(countName, evidence.count());
    json.put("runs", evidence.runs());
    json.put("first_seen", evidence.firstSeen().toString());
    json.put("last_seen", evidence.lastSeen().toString());
    json.put("example_runs", evidence.exampleRuns());
  }

  /** A change's impact as the API answers it ({@code change.impact}, or a refusal's). */
  public static Map<String, Object> impact(ChangeImpact impact) {
    Map<String, Object> json = new LinkedHashMap<>();
    json.put("since", impact.window().since().toString());
    json.put("until", impact.window().until().toString());
    json.put("agents", impact.agents().stream().map(EvidenceJson::agent).toList());
    json.put("agents_unchanged", impact.agentsUnchanged());
    return json;
  }

  private static Map<String, Object> agent(AgentImpact impact) {
    Map<String, Object> json = new LinkedHashMap<>();
    json.put("agent", impact.agent());
    json.put("would_allow", side(impact.wouldAllow(), "refusals", true));
    json.put("would_refuse", side(impact.wouldRefuse(), "connections", true));
    return json;
  }

  private static Map<String, Object> side(ImpactSide side, String countName, boolean hosts) {
    Map<String, Object> json = new LinkedHashMap<>();
    json.put(countName, side.events());
    json.put("runs", side.runs());
    json.put("hosts", side.hosts());
    if (hosts) {
      json.put("top", side.top().stream().map(h -> host(h, countName)).toList());
    }
    return json;
  }

  private static Map<String, Object> host(ImpactHost host, String countName) {
    Map<String, Object> json = new LinkedHashMap<>();
    json.put("host", host.host());
    json.put("port", host.port());
    json.put("refused_as", List.copyOf(host.refusedAs()));
    evidence(json, countName, host.evidence());
    return json;
  }

  /**
   * The counts an {@code agent_sandbox.config.update} (or {@code .refused}) row records as evidence
   * of what the approver saw: per agent, refusals, runs and hosts it would allow, connections, runs
   * and hosts it would refuse.
   */
  public static Map<String, Object> impactCounts(ChangeImpact impact) {
    Map<String, Object> json = new LinkedHashMap<>();
    json.put("since", impact.window().since().toString());
    json.put("until", impact.window().until().toString());
    Map<String, Object> agents = new LinkedHashMap<>();
    for (AgentImpact agent : impact.agents()) {
      Map<String, Object> counts = new LinkedHashMap<>();
      counts.put("would_allow", side(agent.wouldAllow(), "refusals", false));
      counts.put("would_refuse", side(agent.wouldRefuse(), "connections", false));
      agents.put(agent.agent(), counts);
    }
    json.put("agents", agents);
    return json;
  }
}
