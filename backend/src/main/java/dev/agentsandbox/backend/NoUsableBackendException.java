package dev.agentsandbox.backend;

import java.util.List;

/** No configured backend can run sandboxes here; the message lists each attempt and why. */
public class NoUsableBackendException extends SandboxException {
  private static final long serialVersionUID = 1L;

  private final List<String> attempts;

  public NoUsableBackendException(String summary, List<String> attempts) {
    super(attempts.isEmpty() ? summary : summary + ": " + String.join("; ", attempts));
    this.attempts = List.copyOf(attempts);
  }

  /** Each backend tried, as {@code name: why it was not used}. */
  public List<String> attempts() {
    return attempts;
  }
}
