package dev.agentsandbox.proxy;

import dev.agentsandbox.policy.event.DecisionRecord;

/**
 * Receives every decision the proxy makes, in-process (the control plane turns them into audit
 * rows). Called on the proxy's event-loop threads, possibly concurrently: an implementation must be
 * thread-safe and must not block; hand the record to a queue if the work is slow.
 */
@FunctionalInterface
public interface DecisionListener {
  /** One decision; never null. */
  void onDecision(DecisionRecord record);
}
