package dev.agentsandbox.server.governance;

/** What governance counts: saved changes and refused weakenings, by document key. */
public interface GovernanceMetrics {
  /** A change to {@code config} was saved; {@code weakening} if it loosened anything. */
  void configUpdated(String config, boolean weakening);

  /** A weakening of {@code config} was refused. */
  void configRefused(String config);
}
