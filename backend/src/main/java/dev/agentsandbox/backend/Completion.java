package dev.agentsandbox.backend;

import java.util.Objects;
import java.util.OptionalInt;

/**
 * How a sandbox's workload ended.
 *
 * @param end why it ended
 * @param exitStatus the workload's exit status, when it exited by itself or was killed and the
 *     backend could read one
 * @param detail a short description for operators (never the workload's output)
 */
public record Completion(End end, OptionalInt exitStatus, String detail) {
  /** Why a run ended. */
  public enum End {
    /** The workload exited by itself. */
    EXIT,
    /** The deadline passed and the workload was killed. */
    DEADLINE,
    /** An operator asked for the run to be killed. */
    KILLED,
    /** The backend failed (the workload's fate is unknown or it could not start). */
    ERROR,
    /**
     * The sandbox did not run under the isolation it was launched for (a gVisor RuntimeClass whose
     * handler led elsewhere): the workload's command never ran.
     */
    RUNTIME_MISMATCH,
    /**
     * The run's egress proxy stopped (killed, crashed) while the workload ran: the backend stopped
     * the workload, since its traffic could no longer be decided or recorded.
     */
    PROXY_DIED
  }

  public Completion {
    Objects.requireNonNull(end, "end");
    Objects.requireNonNull(exitStatus, "exitStatus");
    Objects.requireNonNull(detail, "detail");
  }
}
