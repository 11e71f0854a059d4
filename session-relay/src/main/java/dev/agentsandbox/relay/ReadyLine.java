package dev.agentsandbox.relay;

import java.util.Optional;

/**
 * The relay's first line on its standard output, which the kubelet keeps as the relay container's
 * log and the control plane reads with {@code get pods/log}: it says the relay reached the step
 * runner and listens, and which certificate it will present. Only the relay writes that log (the
 * workload's output is another container's), and it writes this line before it accepts anything, so
 * the first line is always its own.
 */
public final class ReadyLine {
  /** What the line starts with; the version names this format. */
  public static final String PREFIX = "agent-sandbox-relay ready v1 sha256=";

  private ReadyLine() {}

  /** The line for a relay presenting the certificate pinned as {@code pin}. */
  public static String format(CertificatePin pin) {
    return PREFIX + pin.sha256();
  }

  /**
   * The pin a relay's log announces: its first line must be a ready line, whole and exact.
   *
   * @return empty when the log has no complete first line yet, or its first line is anything else
   */
  public static Optional<CertificatePin> parse(String log) {
    if (log == null) {
      return Optional.empty();
    }
    int end = log.indexOf('\n');
    if (end < 0) {
      return Optional.empty();
    }
    String first = log.substring(0, end);
    if (first.endsWith("\r")) {
      first = first.substring(0, first.length() - 1);
    }
    if (!first.startsWith(PREFIX) || first.length() != PREFIX.length() + 64) {
      return Optional.empty();
    }
    try {
      return Optional.of(new CertificatePin(first.substring(PREFIX.length())));
    } catch (IllegalArgumentException e) {
      return Optional.empty();
    }
  }
}
