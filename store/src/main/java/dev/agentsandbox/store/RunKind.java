package dev.agentsandbox.store;

import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * What kind of run a run is: a one-shot command, or a session whose commands (steps) and file
 * operations come one at a time until it ends (docs/api.md, "Sessions"). The store keeps {@link
 * #wireName()}, which is also what the API shows.
 */
public enum RunKind {
  /** One command, run to its end. */
  RUN,
  /** A sandbox that takes steps and files until it is closed, goes idle or reaches its deadline. */
  SESSION;

  /** The lower-case name the store and the API use. */
  public String wireName() {
    return name().toLowerCase(Locale.ROOT);
  }

  /**
   * The kind with this wire name.
   *
   * @throws IllegalArgumentException when no kind has the name
   */
  public static RunKind fromWireName(String wireName) {
    for (RunKind kind : values()) {
      if (kind.wireName().equals(wireName)) {
        return kind;
      }
    }
    throw new IllegalArgumentException(
        "run kind "
            + wireName
            + " is not one of "
            + Arrays.stream(values()).map(RunKind::wireName).collect(Collectors.joining(", ")));
  }
}
