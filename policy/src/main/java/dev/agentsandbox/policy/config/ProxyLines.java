package dev.agentsandbox.policy.config;

/**
 * The lines the egress proxy prints on its standard error as it starts, which every backend that
 * starts one waits for: the proxy's side of the start, as {@link ProxyPolicy} is the document it is
 * given. Written here once, so that the proxy that prints a line and the backends that wait for it
 * cannot drift apart (docs/proxy.md).
 */
public final class ProxyLines {
  /** Printed once the proxy listens with its policy in force, followed by its address. */
  public static final String READY = "agent-sandbox proxy ready on ";

  /**
   * Printed instead by a proxy started with {@code --await-policy} once it listens, followed by its
   * address. It holds no {@link #READY}, so a backend waiting for the ready line does not take a
   * pending proxy for a ready one.
   */
  public static final String AWAITING_POLICY =
      "agent-sandbox proxy awaiting its policy on stdin, listening on ";

  /**
   * Printed when the awaited policy is in force (with {@code " for run ID"}), before the ready
   * line.
   */
  public static final String POLICY_APPLIED = "agent-sandbox proxy policy applied";

  private ProxyLines() {}
}
