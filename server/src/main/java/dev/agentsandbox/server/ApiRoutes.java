package dev.agentsandbox.server;

import dev.agentsandbox.policy.config.Scopes;
import dev.agentsandbox.server.audit.AuditEndpoints;
import dev.agentsandbox.server.config.ConfigEndpoints;
import dev.agentsandbox.server.config.ProposalEndpoints;
import dev.agentsandbox.server.http.Route;
import dev.agentsandbox.server.http.ServerMetrics;
import dev.agentsandbox.server.run.ArtifactEndpoints;
import dev.agentsandbox.server.run.JwksEndpoint;
import dev.agentsandbox.server.run.RunEndpoints;
import dev.agentsandbox.server.run.SessionEndpoints;
import dev.agentsandbox.server.run.TimelineEndpoints;
import java.util.List;

/**
 * The one route table: every endpoint with its method, path, the scope it needs (none for health,
 * metrics and the OpenAPI document) and what answers. A new endpoint is one line here and an
 * operation in {@code openapi.json}; the tests fail until both agree.
 *
 * <p>A path segment {@code {id}} is always a run id: {@code ApiHandler} passes every such route
 * through the {@code RunGuard} before its handler, so a token limited to agents never reaches a run
 * of another agent (docs/architecture.md invariant 13), and {@code AgentScopeTest} walks this table
 * to prove it for each route.
 */
final class ApiRoutes {
  /** The agent sandbox feature: its configuration, and below it plan, run and runs. */
  static final String FEATURE = "/api/admin/platform/agent-sandbox";

  static final String RUNS = FEATURE + "/runs";
  static final String EGRESS_POLICY = "/api/admin/platform/egress-policy";
  static final String AUDIT = "/api/admin/platform/audit";

  private ApiRoutes() {}

  static List<Route> table(
      HealthEndpoints health,
      ServerMetrics metrics,
      OpenApiDocument openApi,
      ConfigEndpoints config,
      ProposalEndpoints proposals,
      AuditEndpoints audit,
      RunEndpoints runs,
      BackendEndpoints backends,
      ConsoleAssets console,
      ArtifactEndpoints artifacts,
      TimelineEndpoints timelines,
      JwksEndpoint jwks,
      SessionEndpoints sessions,
      TokenEndpoint token) {
    return List.of(
        new Route("GET", "/", null, console::page),
        new Route("GET", "/console/{name}", null, console::asset),
        new Route("GET", "/healthz", null, health::live),
        new Route("GET", "/readyz", null, health::ready),
        new Route("GET", "/metrics", null, request -> metrics.scrape()),
        new Route("GET", OpenApiDocument.PATH, null, openApi::serve),
        new Route("GET", FEATURE, Scopes.READ, config::getSandbox),
        new Route("PUT", FEATURE, Scopes.CONFIGURE, config::putSandbox),
        new Route(
            "GET", FEATURE + "/agents/{agent}/egress-proposal", Scopes.READ, proposals::propose),
        new Route("GET", EGRESS_POLICY, Scopes.READ, config::getEgressPolicy),
        new Route("PUT", EGRESS_POLICY, Scopes.CONFIGURE, config::putEgressPolicy),
        new Route("GET", AUDIT, Scopes.AUDIT_READ, audit::query),
        new Route("GET", AUDIT + "/export", Scopes.AUDIT_READ, audit::export),
        new Route("GET", AUDIT + "/verify", Scopes.AUDIT_READ, audit::verify),
        new Route("GET", FEATURE + "/backends", Scopes.READ, backends::list),
        new Route("POST", FEATURE + "/plan", Scopes.READ, runs::plan),
        new Route("POST", FEATURE + "/run", Scopes.RUN, runs::run),
        new Route("POST", RUNS, Scopes.RUN, runs::start),
        new Route("GET", RUNS, Scopes.READ, runs::list),
        new Route("GET", RUNS + "/{id}", Scopes.READ, runs::get, true),
        new Route("DELETE", RUNS + "/{id}", Scopes.RUN, runs::kill),
        new Route("GET", RUNS + "/{id}/output", Scopes.READ, runs::output),
        new Route("GET", RUNS + "/{id}/artifacts", Scopes.READ, artifacts::list),
        new Route("GET", RUNS + "/{id}/artifacts/file", Scopes.READ, artifacts::download),
        new Route("GET", RUNS + "/{id}/timeline", Scopes.READ, timelines::timeline),
        new Route("POST", FEATURE + "/sessions", Scopes.RUN, sessions::open),
        new Route("POST", RUNS + "/{id}/exec", Scopes.RUN, sessions::exec),
        new Route("GET", RUNS + "/{id}/steps", Scopes.READ, sessions::steps),
        new Route("GET", RUNS + "/{id}/steps/{n}", Scopes.READ, sessions::step),
        new Route("DELETE", RUNS + "/{id}/steps/{n}", Scopes.RUN, sessions::killStep),
        new Route("GET", RUNS + "/{id}/steps/{n}/output", Scopes.READ, sessions::stepOutput),
        new Route("PUT", RUNS + "/{id}/files", Scopes.RUN, sessions::putFiles),
        new Route("GET", RUNS + "/{id}/files", Scopes.READ, sessions::getFiles),
        new Route("GET", FEATURE + "/credentials/jwks", null, jwks::keys),
        new Route("GET", TokenEndpoint.PATH, Scopes.ANY_TOKEN, token::self));
  }
}
