package dev.agentsandbox.runs.session;

import java.util.Locale;

/** Why a step ended, as the API, the store and the audit log name it ({@link #wireName()}). */
public enum StepEndReason {
  /** The command exited by itself. */
  EXIT,
  /** Its time-out passed and it was killed, with everything it started. */
  TIMEOUT,
  /** A {@code DELETE .../steps/{n}} killed it. */
  KILLED,
  /** The session closed, idled out, reached its deadline or failed while the step ran. */
  SESSION_ENDED,
  /** The backend lost the step; its detail says how. */
  ERROR;

  /** The lower-case name used on the wire. */
  public String wireName() {
    return name().toLowerCase(Locale.ROOT);
  }

  /**
   * The reason with this wire name.
   *
   * @throws IllegalArgumentException when none has it
   */
  public static StepEndReason fromWireName(String wireName) {
    for (StepEndReason reason : values()) {
      if (reason.wireName().equals(wireName)) {
        return reason;
      }
    }
    throw new IllegalArgumentException("step end " + wireName + " is not one of the known ends");
  }
}
