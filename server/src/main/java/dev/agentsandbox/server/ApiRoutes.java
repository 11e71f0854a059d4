package dev.agentsandbox.server;

import dev.agentsandbox.server.audit.AuditEndpoints;
import dev.agentsandbox.server.config.ConfigEndpoints;
import dev.agentsandbox.server.http.Route;
import dev.agentsandbox.server.http.ServerMetrics;
import dev.agentsandbox.server.run.RunEndpoints;
import java.util.List;

/**
 * The one route table: every endpoint with its method, path, the scope it needs (none for health
 * and metrics) and what answers. A new endpoint is one line here.
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
      ConfigEndpoints config,
      AuditEndpoints audit,
      RunEndpoints runs) {
    return List.of(
        new Route("GET", "/healthz", null, health::live),
        new Route("GET", "/readyz", null, health::ready),
        new Route("GET", "/metrics", null, request -> metrics.scrape()),
        new Route("GET", FEATURE, Scopes.READ, config::getSandbox),
        new Route("PUT", FEATURE, Scopes.CONFIGURE, config::putSandbox),
        new Route("GET", EGRESS_POLICY, Scopes.READ, config::getEgressPolicy),
        new Route("PUT", EGRESS_POLICY, Scopes.CONFIGURE, config::putEgressPolicy),
        new Route("GET", AUDIT, Scopes.AUDIT_READ, audit::query),
        new Route("GET", AUDIT + "/export", Scopes.AUDIT_READ, audit::export),
        new Route("POST", FEATURE + "/plan", Scopes.READ, runs::plan),
        new Route("POST", FEATURE + "/run", Scopes.RUN, runs::run),
        new Route("POST", RUNS, Scopes.RUN, runs::start),
        new Route("GET", RUNS, Scopes.READ, runs::list),
        new Route("GET", RUNS + "/{id}", Scopes.READ, runs::get),
        new Route("DELETE", RUNS + "/{id}", Scopes.RUN, runs::kill),
        new Route("GET", RUNS + "/{id}/output", Scopes.READ, runs::output));
  }
}
