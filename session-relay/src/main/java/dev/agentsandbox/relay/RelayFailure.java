package dev.agentsandbox.relay;

/** Why a relay could not start serving; its log's first line names it instead of a ready line. */
public enum RelayFailure {
  /** The step runner did not accept the relay's connection in time. */
  RUNNER_UNREACHABLE("runner-unreachable"),
  /** The relay could not listen on the pod's address and port. */
  LISTEN_FAILED("listen-failed");

  /** What a failed relay's first line starts with, before the reason. */
  public static final String PREFIX = "agent-sandbox-relay failed ";

  private final String wireName;

  RelayFailure(String wireName) {
    this.wireName = wireName;
  }

  /** The name the relay's log uses. */
  public String wireName() {
    return wireName;
  }

  /** The reason a log's first line names, if it is a failure line. */
  public static java.util.Optional<RelayFailure> parse(String log) {
    if (log == null || !log.startsWith(PREFIX)) {
      return java.util.Optional.empty();
    }
    int end = log.indexOf('\n');
    String reason = (end < 0 ? log : log.substring(0, end)).substring(PREFIX.length()).strip();
    for (RelayFailure failure : values()) {
      if (failure.wireName.equals(reason)) {
        return java.util.Optional.of(failure);
      }
    }
    return java.util.Optional.empty();
  }
}
