package dev.agentsandbox.backend.session;

import dev.agentsandbox.backend.SandboxException;
import java.util.Objects;

/**
 * A file operation was refused inside the sandbox for what the path is there (not for how it is
 * written, which {@link WorkspacePath} checks first). Nothing was written.
 */
public class PathRefusedException extends SandboxException {
  private static final long serialVersionUID = 1L;

  /** Why; each backend reports one of these, and the API names it ({@link #wireName()}). */
  public enum Reason {
    /** Nothing is at the path, or a folder on the way to it is missing. */
    NOT_FOUND("not-found"),
    /** A segment of the path is a symbolic link; links are never followed. */
    SYMLINK("symlink"),
    /** The path is neither a regular file nor a folder (a device, a fifo, a socket). */
    NOT_REGULAR("not-regular"),
    /** A file was asked for or written where a folder is, or the reverse. */
    WRONG_KIND("wrong-kind"),
    /** The file or folder is larger than the agent's cap (a sparse file counts its full size). */
    TOO_LARGE("too-large"),
    /** The workload's user may not read or write it. */
    PERMISSION("permission");

    private final String wireName;

    Reason(String wireName) {
      this.wireName = wireName;
    }

    /** The reason as the API and the audit log name it. */
    public String wireName() {
      return wireName;
    }
  }

  private final Reason reason;
  private final WorkspacePath path;

  public PathRefusedException(WorkspacePath path, Reason reason, String message) {
    super(message);
    this.path = Objects.requireNonNull(path, "path");
    this.reason = Objects.requireNonNull(reason, "reason");
  }

  public Reason reason() {
    return reason;
  }

  public WorkspacePath path() {
    return path;
  }
}
