package dev.agentsandbox.server.run;

import dev.agentsandbox.server.http.Route;
import dev.agentsandbox.server.Scopes;
import java.util.List;

/** The run endpoints' paths and scopes, for the route table. */
public final class RunRoutes {
  /** The base path of the feature. */
  public static final String BASE = "/api/admin/platform/agent-sandbox";

  /** The asynchronous runs collection. */
  public static final String RUNS = BASE + "/runs";

  private RunRoutes() {}

  /** The run routes: plan needs read, running and killing need run. */
  public static List<Route> table(RunEndpoints runs) {
    return List.of(
        new Route("POST", BASE + "/plan", Scopes.READ, runs::plan),
        new Route("POST", BASE + "/run", Scopes.RUN, runs::run),
        new Route("POST", RUNS, Scopes.RUN, runs::start),
        new Route("GET", RUNS, Scopes.READ, runs::list),
        new Route("GET", RUNS + "/{id}", Scopes.READ, runs::get),
        new Route("DELETE", RUNS + "/{id}", Scopes.RUN, runs::kill),
        new Route("GET", RUNS + "/{id}/output", Scopes.READ, runs::output));
  }
}
