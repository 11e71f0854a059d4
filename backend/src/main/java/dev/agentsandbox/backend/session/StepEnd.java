package dev.agentsandbox.backend.session;

import java.util.Objects;
import java.util.OptionalInt;

/**
 * How a step ended, as the backend saw it.
 *
 * @param end why
 * @param exitStatus the command's exit status when it had one (128 + the signal's number when a
 *     signal ended it)
 * @param detail a short description for operators (never the step's output)
 */
public record StepEnd(End end, OptionalInt exitStatus, String detail) {
  /** Why a step ended. */
  public enum End {
    /** The command exited by itself. */
    EXIT,
    /** {@link Step#kill()} stopped it (its time-out, a kill request, the session ending). */
    KILLED,
    /** The backend lost the step (the daemon, guest or runner failed); its fate is unknown. */
    ERROR
  }

  public StepEnd {
    Objects.requireNonNull(end, "end");
    Objects.requireNonNull(exitStatus, "exitStatus");
    Objects.requireNonNull(detail, "detail");
  }
}
