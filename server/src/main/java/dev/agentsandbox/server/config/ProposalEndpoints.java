package dev.agentsandbox.server.config;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.agentsandbox.policy.config.AgentSettings;
import dev.agentsandbox.policy.config.SandboxConfig;
import dev.agentsandbox.policy.evidence.EgressProposal;
import dev.agentsandbox.policy.evidence.EgressProposer;
import dev.agentsandbox.policy.governance.GovernedDocument;
import dev.agentsandbox.runs.json.Json;
import dev.agentsandbox.server.evidence.EgressEvidence;
import dev.agentsandbox.server.evidence.EvidenceJson;
import dev.agentsandbox.server.evidence.EvidenceWindow;
import dev.agentsandbox.server.governance.GovernedConfigs;
import dev.agentsandbox.server.governance.Versioned;
import dev.agentsandbox.server.http.ApiException;
import dev.agentsandbox.server.http.Echo;
import dev.agentsandbox.server.http.Request;
import dev.agentsandbox.server.http.Response;
import dev.agentsandbox.store.EgressIndex;
import java.time.Instant;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * {@code GET .../agents/{agent}/egress-proposal}: the allow-list entries the agent's recorded
 * refusals call for, each with its evidence, computed by the policy core ({@link EgressProposer})
 * over the current documents, with the version it extends, so that saving it is an ordinary
 * governed {@code PUT} of that version.
 */
public final class ProposalEndpoints {
  private static final Pattern AGENT = Pattern.compile("[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?");

  private final GovernedConfigs configs;
  private final EgressEvidence evidence;
  private final ObjectMapper mapper;

  public ProposalEndpoints(GovernedConfigs configs, EgressEvidence evidence, ObjectMapper mapper) {
    this.configs = configs;
    this.evidence = evidence;
    this.mapper = mapper;
  }

  public Response propose(Request request) {
    request.onlyQueryParams(Set.of("since"));
    String agent = request.pathParam("agent");
    if (agent == null || !AGENT.matcher(agent).matches()) {
      throw ApiException.badRequest(
          "propose egress entries for agent '"
              + Echo.bounded(agent)
              + "': not an agent name (1 to 63 lower-case letters, digits and inner hyphens)");
    }
    EvidenceWindow window =
        EvidenceWindow.parse("since", request.query().get("since"), Instant.now());
    Versioned<SandboxConfig> sandbox = configs.current(GovernedDocument.SANDBOX);
    Versioned<dev.agentsandbox.policy.config.EgressPolicy> policy =
        configs.current(GovernedDocument.EGRESS_POLICY);
    AgentSettings settings = sandbox.document().agents().get(agent);
    // A token limited to other agents is answered exactly as for an agent that is not listed, so
    // it learns nothing of another team's agents or their refusals (invariant 13).
    if (settings == null || !request.principal().agents().permits(agent)) {
      throw new ApiException(
          404,
          "agent_not_listed",
          "propose egress entries for agent "
              + agent
              + ": it has no sandbox configuration (add it under agents in the configuration)");
    }
    EgressProposal proposal =
        EgressProposer.propose(
            agent,
            sandbox.document(),
            policy.document(),
            evidence.of(agent, window.since(), EgressIndex.Decisions.DENY));
    Map<String, Object> body = new java.util.LinkedHashMap<>();
    body.put("version", sandbox.version());
    body.put("egress_policy_version", policy.version());
    body.putAll(EvidenceJson.proposal(proposal, window, settings.allow().asStrings()));
    body.put("loosenings", GovernedConfigs.looseningRows(proposal.loosenings()));
    return Response.json(200, Json.bytes(mapper, body));
  }
}
