package dev.agentsandbox.steprunner;

import dev.agentsandbox.backend.session.PathRefusedException;
import dev.agentsandbox.backend.session.UnableToRunStepException;
import dev.agentsandbox.backend.session.WorkspacePath;
import dev.agentsandbox.policy.text.Bounded;

/**
 * A REFUSED frame: why the runner refused an operation, and at which segment of its path. The
 * message a person reads is the host's own words; of the runner's text only a bounded, printable
 * prefix is kept, and only for failures that are not about the path.
 */
record Refusal(int reason, int segment, String text) {
  static final int FAILED = 7;
  static final int BUSY = 8;

  static Refusal read(Frame frame) {
    Payload.Reader reader = new Payload.Reader(frame);
    long reason = reader.u32();
    long segment = reader.u32();
    String text = reader.str(1024);
    reader.end();
    if (reason < 1 || reason > BUSY) {
      throw new ProtocolViolationException(frame + " names an unknown reason " + reason);
    }
    return new Refusal((int) reason, (int) Math.min(segment, Integer.MAX_VALUE), text);
  }

  /**
   * The exception for an attempt on {@code path}.
   *
   * @param attempt what was tried on what, as the message begins ({@code reading /workspace/a in
   *     run r7})
   */
  RuntimeException exception(String attempt, WorkspacePath path) {
    if (reason == FAILED || reason == BUSY) {
      return new UnableToRunStepException(
          attempt + ": the step runner could not (" + printable(text) + ")");
    }
    PathRefusedException.Reason named =
        switch (reason) {
          case 1 -> PathRefusedException.Reason.NOT_FOUND;
          case 2 -> PathRefusedException.Reason.SYMLINK;
          case 3 -> PathRefusedException.Reason.NOT_REGULAR;
          case 4 -> PathRefusedException.Reason.WRONG_KIND;
          case 5 -> PathRefusedException.Reason.TOO_LARGE;
          default -> PathRefusedException.Reason.PERMISSION;
        };
    WorkspacePath at =
        new WorkspacePath(
            path.segments().subList(0, Math.min(segment + 1, path.segments().size())));
    String happened =
        switch (named) {
          case NOT_FOUND -> "nothing is at " + at;
          case SYMLINK -> at + " is a symbolic link (links are never followed)";
          case NOT_REGULAR -> at + " is neither a regular file nor a folder";
          case WRONG_KIND -> at + " is a file where a folder is needed, or the reverse";
          case TOO_LARGE -> "it is larger than the cap (a sparse file counts its full size)";
          case PERMISSION -> "the workload's user may not use " + at;
        };
    return new PathRefusedException(path, named, attempt + ": " + happened);
  }

  /** At most 200 printable ASCII characters of what the guest said. */
  static String printable(String text) {
    return Bounded.text(text, 200, Bounded.Escape.PRINTABLE_ASCII, "");
  }
}
