package dev.agentsandbox.server.governance;

import dev.agentsandbox.policy.config.Loosening;
import java.util.List;
import java.util.Map;

/**
 * A change loosens the document and lacks what a loosening needs: the {@code governance.weaken}
 * scope, a reason, or both. An {@code agent_sandbox.config.refused} row was appended before this
 * was thrown.
 */
public final class WeakeningRefusedException extends GovernanceException {
  private static final long serialVersionUID = 1L;

  @SuppressWarnings("serial") // a list of records; never serialized in practice
  private final List<Loosening> loosenings;

  @SuppressWarnings("serial") // a list of strings; never serialized in practice
  private final List<String> missing;

  @SuppressWarnings("serial") // plain JSON-able values; never serialized in practice
  private final Map<String, Object> impact;

  public WeakeningRefusedException(
      String message,
      List<Loosening> loosenings,
      List<String> missing,
      Map<String, Object> impact) {
    super(message);
    this.loosenings = List.copyOf(loosenings);
    this.missing = List.copyOf(missing);
    this.impact = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(impact));
  }

  /**
   * What the change would have done to recorded egress, as the API renders it: a refused preview
   * shows it too.
   */
  public Map<String, Object> impact() {
    return impact;
  }

  /** Every loosening the change makes. */
  public List<Loosening> loosenings() {
    return loosenings;
  }

  /** What is missing, by wire name: the scope {@code governance.weaken} and/or {@code reason}. */
  public List<String> missing() {
    return missing;
  }
}
