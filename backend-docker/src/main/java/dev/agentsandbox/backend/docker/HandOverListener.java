package dev.agentsandbox.backend.docker;

import dev.agentsandbox.backend.SandboxListener;
import java.util.ArrayList;
import java.util.List;

/**
 * The listener of a warm sandbox, whose run (and so whose real listener) is not known while it is
 * prepared: output and decisions before the hand-over are kept (bounded; the idle workload writes
 * none and nothing can ask its proxy anything yet) and delivered, in order, to the run's listener
 * once it is set. Thread-safe.
 */
final class HandOverListener implements SandboxListener {
  private static final int KEPT = 1000;

  private final List<String> decisions = new ArrayList<>();
  private final List<byte[]> output = new ArrayList<>();
  private SandboxListener target;

  /** From now on, everything goes to {@code run}, after what was kept. */
  synchronized void handOver(SandboxListener run) {
    output.forEach(run::onOutput);
    decisions.forEach(run::onEgressDecision);
    output.clear();
    decisions.clear();
    target = run;
  }

  @Override
  public synchronized void onOutput(byte[] chunk) {
    if (target != null) {
      target.onOutput(chunk);
    } else if (output.size() < KEPT) {
      output.add(chunk.clone());
    }
  }

  @Override
  public synchronized void onEgressDecision(String jsonLine) {
    if (target != null) {
      target.onEgressDecision(jsonLine);
    } else if (decisions.size() < KEPT) {
      decisions.add(jsonLine);
    }
  }
}
