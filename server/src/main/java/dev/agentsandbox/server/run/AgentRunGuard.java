package dev.agentsandbox.server.run;

import dev.agentsandbox.runs.RunNotFoundException;
import dev.agentsandbox.runs.RunService;
import dev.agentsandbox.server.http.RunGuard;
import dev.agentsandbox.store.TokenInfo;

/**
 * The run guard of the API: a token limited to agents touches only their runs; a run of any other
 * agent is answered exactly as a run that does not exist (404 {@code run_not_found}), never 403, so
 * that the token cannot even learn which ids are runs (docs/architecture.md invariant 13). For such
 * a token the guard answers an id no run has too, so that both come from this one place with the
 * same message whatever each endpoint would have said.
 */
public final class AgentRunGuard implements RunGuard {
  private final RunService runs;

  public AgentRunGuard(RunService runs) {
    this.runs = runs;
  }

  @Override
  public void check(TokenInfo token, String runId) {
    if (!token.agents().limited()) {
      return;
    }
    if (!runs.agentOf(runId).filter(token.agents()::permits).isPresent()) {
      throw new RunNotFoundException(runId);
    }
  }
}
