package dev.agentsandbox.server.http;

import dev.agentsandbox.store.TokenInfo;

/**
 * The one check every endpoint of a run passes before its handler: may this token touch the run
 * that the path's {@code {id}} names? {@link ApiHandler} asks it for every authenticated route
 * whose path has an {@code {id}}, so a new endpoint of a run gets it by being in the route table.
 */
@FunctionalInterface
public interface RunGuard {
  /** A guard that lets every token through, for servers whose tokens are never limited. */
  RunGuard NONE = (token, runId) -> {};

  /**
   * Returns when {@code token} may touch run {@code runId} (or leaves an id no run has to the
   * handler).
   *
   * @throws RuntimeException the answer for a run of an agent the token may not touch: the same as
   *     for a run that does not exist
   */
  void check(TokenInfo token, String runId);
}
