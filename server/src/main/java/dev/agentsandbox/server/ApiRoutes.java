package dev.agentsandbox.server;

import dev.agentsandbox.server.audit.AuditEndpoints;
import dev.agentsandbox.server.config.ConfigEndpoints;
import dev.agentsandbox.server.http.Route;
import dev.agentsandbox.server.http.Scopes;
import dev.agentsandbox.server.http.ServerMetrics;
import java.util.List;

/**
 * The one route table: every endpoint, its method and the scope it needs. Plan and run endpoints
 * join here.
 */
final class ApiRoutes {
  static final String CONFIG = "/api/admin/platform/agent-sandbox";
  static final String EGRESS_POLICY = "/api/admin/platform/egress-policy";
  static final String AUDIT = "/api/admin/platform/audit";

  private ApiRoutes() {}

  static List<Route> table(
      HealthEndpoints health,
      ServerMetrics metrics,
      ConfigEndpoints config,
      AuditEndpoints audit,
      BackendEndpoints backends,
      ConsoleAssets console) {
    return List.of(
        new Route("GET", "/", null, console::page),
        new Route("GET", "/console/{name}", null, console::asset),
        new Route("GET", "/healthz", null, health::live),
        new Route("GET", "/readyz", null, health::ready),
        new Route("GET", "/metrics", null, request -> metrics.scrape()),
        new Route("GET", CONFIG, Scopes.READ, config::getSandbox),
        new Route("PUT", CONFIG, Scopes.CONFIGURE, config::putSandbox),
        new Route("GET", EGRESS_POLICY, Scopes.READ, config::getEgressPolicy),
        new Route("PUT", EGRESS_POLICY, Scopes.CONFIGURE, config::putEgressPolicy),
        new Route("GET", AUDIT, Scopes.AUDIT_READ, audit::query),
        new Route("GET", AUDIT + "/export", Scopes.AUDIT_READ, audit::export),
        new Route("GET", AUDIT + "/verify", Scopes.AUDIT_READ, audit::verify),
        new Route("GET", CONFIG + "/backends", Scopes.READ, backends::list));
  }
}
