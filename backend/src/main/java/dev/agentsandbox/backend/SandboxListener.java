package dev.agentsandbox.backend;

/**
 * Receives what a running sandbox produces, as it happens. Backends call it from their own threads,
 * one call at a time per sandbox and per method; implementations must be thread-safe across methods
 * and must not block for long.
 */
public interface SandboxListener {
  /**
   * A chunk of the workload's standard output, in order; on a backend that does not keep the two
   * apart, its combined standard output and error.
   */
  void onOutput(byte[] chunk);

  /**
   * A chunk of the workload's standard error, in order, from a backend that keeps it apart from
   * standard output (Docker does). By default it joins the output.
   */
  default void onErrorOutput(byte[] chunk) {
    onOutput(chunk);
  }

  /**
   * One decision of the run's egress proxy, as the JSON line the proxy wrote (see docs/proxy.md).
   * Lines arrive in the order the proxy wrote them.
   */
  void onEgressDecision(String jsonLine);

  /** A listener that drops everything, for callers that only need the outcome. */
  SandboxListener NONE =
      new SandboxListener() {
        @Override
        public void onOutput(byte[] chunk) {}

        @Override
        public void onEgressDecision(String jsonLine) {}
      };
}
