package dev.agentsandbox.server.config;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.config.AgentGrant;
import dev.agentsandbox.policy.config.EgressPolicy;
import dev.agentsandbox.policy.config.SandboxConfig;
import dev.agentsandbox.policy.governance.GovernedDocument;
import dev.agentsandbox.runs.json.Json;
import dev.agentsandbox.server.evidence.EvidenceJson;
import dev.agentsandbox.server.evidence.EvidenceWindow;
import dev.agentsandbox.server.governance.GovernedConfigs;
import dev.agentsandbox.server.governance.Versioned;
import dev.agentsandbox.server.http.ApiException;
import dev.agentsandbox.server.http.Request;
import dev.agentsandbox.server.http.Response;
import java.io.IOException;
import java.time.Instant;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;

/**
 * {@code GET}/{@code PUT} of the agent sandbox configuration and the instance egress policy. Each
 * answer carries the stored version as {@code version} and as the {@code ETag}; the sandbox
 * configuration also shows each agent's {@code effective_allow}: its allow-list narrowed by its
 * scope's egress policy rule, which is what will really apply. A token limited to agents reads only
 * its agents' settings and the egress policy's rules that apply to them (docs/architecture.md
 * invariant 13); it cannot hold the scope to change either.
 */
public final class ConfigEndpoints {
  private final GovernedConfigs configs;
  private final ObjectMapper mapper;

  public ConfigEndpoints(GovernedConfigs configs, ObjectMapper mapper) {
    this.configs = configs;
    this.mapper = mapper;
  }

  public Response getSandbox(Request request) {
    AgentGrant grant = request.principal().agents();
    return get(request, GovernedDocument.SANDBOX, current -> sandboxView(current, grant));
  }

  public Response putSandbox(Request request) throws IOException {
    AgentGrant grant = request.principal().agents();
    return put(request, GovernedDocument.SANDBOX, current -> sandboxView(current, grant));
  }

  public Response getEgressPolicy(Request request) {
    AgentGrant grant = request.principal().agents();
    return get(request, GovernedDocument.EGRESS_POLICY, current -> egressView(current, grant));
  }

  public Response putEgressPolicy(Request request) throws IOException {
    AgentGrant grant = request.principal().agents();
    return put(request, GovernedDocument.EGRESS_POLICY, current -> egressView(current, grant));
  }

  /** {@code GET}: the document's current version in its view. */
  private <T> Response get(
      Request request,
      GovernedDocument<T> document,
      Function<Versioned<T>, Map<String, Object>> view) {
    request.onlyQueryParams(Set.of());
    return answer(view.apply(configs.current(document)), null);
  }

  /** {@code PUT}: the governed change, then the saved (or, dry, the checked) version's view. */
  private <T> Response put(
      Request request,
      GovernedDocument<T> document,
      Function<Versioned<T>, Map<String, Object>> view)
      throws IOException {
    boolean dryRun = dryRun(request);
    EvidenceWindow window =
        EvidenceWindow.parse("impact_since", request.query().get("impact_since"), Instant.now());
    GovernedConfigs.Change<T> change =
        configs.update(
            document,
            request.jsonBody(),
            request.header("If-Match"),
            request.principal(),
            dryRun,
            window);
    return answer(view.apply(change.saved()), change);
  }

  /**
   * {@code ?dry_run=true}: every check of a save, nothing stored; {@code impact_since}: how far
   * back the change's impact reads (docs/api.md).
   */
  private static boolean dryRun(Request request) {
    request.onlyQueryParams(Set.of("dry_run", "impact_since"));
    String value = request.query().get("dry_run");
    if (value == null || value.equals("false")) {
      return false;
    }
    if (value.equals("true")) {
      return true;
    }
    throw ApiException.badRequest("dry_run must be true or false");
  }

  private Map<String, Object> sandboxView(Versioned<SandboxConfig> current, AgentGrant grant) {
    EgressPolicy policy = configs.current(GovernedDocument.EGRESS_POLICY).document();
    Map<String, Object> view = metadata(current);
    Map<String, Object> tree = current.document().toTree();
    Map<String, AllowList> effective = current.document().effectiveAllow(policy);
    @SuppressWarnings("unchecked")
    Map<String, Object> agents = (Map<String, Object>) tree.get("agents");
    agents.keySet().removeIf(name -> !grant.permits(name));
    agents.replaceAll(
        (name, agentTree) -> {
          @SuppressWarnings("unchecked")
          Map<String, Object> withEffective = new LinkedHashMap<>((Map<String, Object>) agentTree);
          withEffective.put("effective_allow", effective.get(name).asStrings());
          return withEffective;
        });
    view.putAll(tree);
    return view;
  }

  private Map<String, Object> egressView(Versioned<EgressPolicy> current, AgentGrant grant) {
    Map<String, Object> view = metadata(current);
    Map<String, Object> tree = current.document().toTree();
    if (grant.limited()) {
      // Only the rules of the scopes its agents are in: the others name other teams' reach.
      Set<String> scopes = new HashSet<>();
      configs
          .current(GovernedDocument.SANDBOX)
          .document()
          .agents()
          .forEach(
              (name, agent) -> {
                if (grant.permits(name)) {
                  scopes.add(agent.scope());
                }
              });
      @SuppressWarnings("unchecked")
      Map<String, Object> rules = (Map<String, Object>) tree.get("scopes");
      rules.keySet().removeIf(scope -> !scopes.contains(scope));
    }
    view.putAll(tree);
    return view;
  }

  private static Map<String, Object> metadata(Versioned<?> current) {
    Map<String, Object> view = new LinkedHashMap<>();
    view.put("version", current.version());
    view.put("updated_at", current.updatedAt() == null ? null : current.updatedAt().toString());
    view.put("updated_by", current.updatedBy());
    return view;
  }

  private Response answer(Map<String, Object> view, GovernedConfigs.Change<?> change) {
    if (change != null) {
      Map<String, Object> summary = new LinkedHashMap<>();
      summary.put("weakening", !change.loosenings().isEmpty());
      summary.put("loosenings", GovernedConfigs.looseningRows(change.loosenings()));
      summary.put("reason", change.reason());
      if (change.dryRun()) {
        summary.put("dry_run", true);
      }
      summary.put("impact", EvidenceJson.impact(change.impact()));
      view.put("change", summary);
    }
    return Response.json(200, Json.bytes(mapper, view))
        .withHeader("ETag", "\"" + view.get("version") + "\"");
  }
}
