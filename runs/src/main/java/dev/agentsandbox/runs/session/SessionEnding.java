package dev.agentsandbox.runs.session;

import java.util.Locale;

/**
 * How a session ends normally, each with status {@code closed}: the run's {@code end} names which
 * ({@link #wireName()}). The other ends a session can meet are a run's ({@code deadline}, {@code
 * killed}, {@code error}, {@code proxy_died}, ...).
 */
public enum SessionEnding {
  /** A {@code DELETE .../runs/{id}} closed it. */
  CLOSED,
  /** No step ran and no file operation happened for its {@code idle_seconds}. */
  IDLE;

  /** The lower-case name the run's {@code end} carries. */
  public String wireName() {
    return name().toLowerCase(Locale.ROOT);
  }
}
