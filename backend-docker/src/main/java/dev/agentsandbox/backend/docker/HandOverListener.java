package dev.agentsandbox.backend.docker;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.agentsandbox.backend.SandboxListener;
import dev.agentsandbox.policy.event.DecisionRecord;
import dev.agentsandbox.policy.event.InvalidEventException;
import dev.agentsandbox.policy.net.Reason;
import java.util.ArrayList;
import java.util.List;

/**
 * The listener of a sandbox whose run (and so whose real listener) is not known yet: a warm
 * sandbox's, or a proxy-pool standby's. Output and decisions before the hand-over are kept
 * (bounded, {@value #KEPT} of each); what happens to them at the hand-over depends on whose they
 * are:
 *
 * <ul>
 *   <li>a warm sandbox's proxy holds the run's policy from its start, so its decisions are the
 *       run's: {@link #handOver} delivers them, in order, before anything new;
 *   <li>a standby's proxy refused everything before the run's policy ({@code policy-pending}), on
 *       behalf of no run: {@link #handOverDroppingPrePolicy} drops them, and keeps dropping such
 *       refusals that were still on their way; only their count is reported (nothing of a run's may
 *       try a standby before its run takes it, so any is worth a look).
 * </ul>
 *
 * Thread-safe.
 */
final class HandOverListener implements SandboxListener {
  private static final int KEPT = 1000;

  private static final ObjectMapper JSON = new ObjectMapper();

  private final List<String> decisions = new ArrayList<>();
  private final List<byte[]> output = new ArrayList<>();
  private SandboxListener target;
  private boolean dropPrePolicy;
  private long droppedPrePolicy;

  /** From now on, everything goes to {@code run}, after what was kept. */
  synchronized void handOver(SandboxListener run) {
    output.forEach(run::onOutput);
    decisions.forEach(run::onEgressDecision);
    output.clear();
    decisions.clear();
    target = run;
  }

  /**
   * From now on, everything goes to {@code run} except refusals made before any policy: those kept
   * are dropped, and so are those that arrive later.
   *
   * @return how many were dropped now (more may follow; {@link #droppedPrePolicy()})
   */
  synchronized long handOverDroppingPrePolicy(SandboxListener run) {
    long before = droppedPrePolicy;
    for (String line : decisions) {
      if (prePolicy(line)) {
        droppedPrePolicy++;
      } else {
        run.onEgressDecision(line);
      }
    }
    output.forEach(run::onOutput);
    output.clear();
    decisions.clear();
    dropPrePolicy = true;
    target = run;
    return droppedPrePolicy - before;
  }

  /** How many pre-policy refusals were dropped in all. */
  synchronized long droppedPrePolicy() {
    return droppedPrePolicy;
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
      if (dropPrePolicy && prePolicy(jsonLine)) {
        droppedPrePolicy++;
      } else {
        target.onEgressDecision(jsonLine);
      }
    } else if (decisions.size() < KEPT) {
      decisions.add(jsonLine);
    }
  }

  /**
   * Whether the proxy's decision line, read as its one wire form ({@link DecisionRecord}), is a
   * refusal for want of a policy. A line that is not a decision is passed on as it is: the run's
   * recorder says what is wrong with it.
   */
  static boolean prePolicy(String jsonLine) {
    try {
      return DecisionRecord.read(JSON.readValue(jsonLine, Object.class)).reason()
          == Reason.POLICY_PENDING;
    } catch (JsonProcessingException | InvalidEventException notADecision) {
      return false;
    }
  }
}
