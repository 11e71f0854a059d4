package dev.agentsandbox.steprunner;

import dev.agentsandbox.backend.session.InvalidWorkspacePathException;
import dev.agentsandbox.backend.session.PathInfo;
import dev.agentsandbox.backend.session.WorkspacePath;
import java.time.Instant;
import java.util.Arrays;
import java.util.List;

/**
 * An INFO frame: what is at a path, as the runner read it without following a link. Its name is
 * checked as a path before the host uses it: a single segment in a listing, a relative path in a
 * walk, never {@code ..}, absolute, empty or holding a control character.
 */
record Info(PathInfo.Kind kind, long size, int mode, Instant modified, String name) {
  static Info read(Frame frame) {
    Payload.Reader reader = new Payload.Reader(frame);
    long kind = reader.u32();
    long size = reader.u64();
    long mode = reader.u32();
    long high = reader.u32();
    long low = reader.u32();
    long seconds = high << 32 | low;
    long nanos = reader.u32();
    String name = reader.str(WorkspacePath.MAX_BYTES);
    reader.end();
    if (kind < 1 || kind > 4 || mode > 07777 || nanos > 999_999_999) {
      throw new ProtocolViolationException(frame + " holds an impossible kind, mode or time");
    }
    PathInfo.Kind named = PathInfo.Kind.values()[(int) kind - 1];
    if (named != PathInfo.Kind.FILE && size != 0) {
      throw new ProtocolViolationException(frame + " gives a size to what is not a file");
    }
    // Any time the guest likes, within what an Instant holds.
    long clamped =
        Math.max(Instant.MIN.getEpochSecond(), Math.min(Instant.MAX.getEpochSecond(), seconds));
    return new Info(named, size, (int) mode, Instant.ofEpochSecond(clamped, nanos), name);
  }

  /** The name as a path relative to the folder that was walked or listed. */
  WorkspacePath relative(boolean oneSegment) {
    if (name.isEmpty() || name.startsWith("/") || name.endsWith("/")) {
      throw new ProtocolViolationException("an entry named '" + Refusal.printable(name) + "'");
    }
    List<String> segments = Arrays.asList(name.split("/", -1));
    if (oneSegment && segments.size() != 1) {
      throw new ProtocolViolationException("a listed name with a / in it");
    }
    try {
      return new WorkspacePath(segments);
    } catch (InvalidWorkspacePathException e) {
      throw new ProtocolViolationException(
          "an entry named '" + Refusal.printable(name) + "': " + e.getMessage());
    }
  }

  PathInfo at(WorkspacePath path) {
    return new PathInfo(path, kind, size, mode, modified);
  }
}
