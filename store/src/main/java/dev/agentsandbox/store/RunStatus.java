package dev.agentsandbox.store;

import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * Where a run is in its life, in the order a run can pass through the states. The store keeps
 * {@link #wireName()}, which is also what the API shows.
 */
public enum RunStatus {
  /** Admitted and audited; the sandbox is being created. */
  PENDING,
  /** The workload is running. */
  RUNNING,
  /** The workload exited by itself. */
  EXITED,
  /** The run's deadline passed and the workload was killed. */
  DEADLINE,
  /** The backend failed, or the control plane that owned the run stopped while it was live. */
  FAILED,
  /** An operator killed the run. */
  KILLED,
  /**
   * A session ended normally: it was closed ({@code DELETE .../runs/{id}}) or went idle (no step
   * and no file operation for its {@code idle_seconds}).
   */
  CLOSED,
  /** The run was refused before anything was created. */
  REFUSED;

  /** The lower-case name the store and the API use. */
  public String wireName() {
    return name().toLowerCase(Locale.ROOT);
  }

  /** Whether a run in this state has not ended yet. */
  public boolean active() {
    return this == PENDING || this == RUNNING;
  }

  /**
   * The status with this wire name.
   *
   * @throws IllegalArgumentException when no status has the name
   */
  public static RunStatus fromWireName(String wireName) {
    for (RunStatus status : values()) {
      if (status.wireName().equals(wireName)) {
        return status;
      }
    }
    throw new IllegalArgumentException(
        "run status "
            + wireName
            + " is not one of "
            + Arrays.stream(values()).map(RunStatus::wireName).collect(Collectors.joining(", ")));
  }
}
