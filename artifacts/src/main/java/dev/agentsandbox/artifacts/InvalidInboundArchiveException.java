package dev.agentsandbox.artifacts;

import dev.agentsandbox.artifacts.CollectedOutputs.Reason;
import java.util.Objects;
import java.util.Optional;

/**
 * An archive sent into a session was refused whole: one entry broke a rule ({@link #reason()}), or
 * it was not a readable tar archive at all (no reason). Nothing of it was written. The message
 * names the entry (bounded, control characters replaced) and why.
 */
public class InvalidInboundArchiveException extends ArtifactException {
  private static final long serialVersionUID = 1L;

  private final String entry;

  @SuppressWarnings("serial") // an enum constant, or empty
  private final Optional<Reason> reason;

  public InvalidInboundArchiveException(String entry, Optional<Reason> reason, String message) {
    super(message);
    this.entry = Objects.requireNonNull(entry, "entry");
    this.reason = Objects.requireNonNull(reason, "reason");
  }

  /** The refused entry's name as it may be shown; {@code (archive)} for the archive itself. */
  public String entry() {
    return entry;
  }

  /** The rule the entry broke; empty when the archive could not be read as a tar archive. */
  public Optional<Reason> reason() {
    return reason;
  }
}
