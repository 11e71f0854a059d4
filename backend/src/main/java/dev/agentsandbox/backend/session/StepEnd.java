package dev.agentsandbox.backend.session;

import java.util.Objects;
import java.util.OptionalInt;
import java.util.OptionalLong;

/**
 * How a step ended, as the backend saw it.
 *
 * @param end why
 * @param exitStatus the command's exit status when it had one (128 + the signal's number when a
 *     signal ended it)
 * @param detail a short description for operators (never the step's output)
 * @param connectionsOpened the TCP connections the sandbox opened while the step ran (anything in
 *     it, not only the step: its network namespace's count), when the backend could read it. The
 *     sandbox's only way out is a connection to its proxy, so zero says the proxy decided nothing
 *     new for it and nothing about it is on its way; empty when not known.
 */
public record StepEnd(
    End end, OptionalInt exitStatus, String detail, OptionalLong connectionsOpened) {
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
    Objects.requireNonNull(connectionsOpened, "connectionsOpened");
  }

  /** An end without a count of the connections opened. */
  public StepEnd(End end, OptionalInt exitStatus, String detail) {
    this(end, exitStatus, detail, OptionalLong.empty());
  }
}
