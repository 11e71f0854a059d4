package dev.agentsandbox.backend.session;

import dev.agentsandbox.backend.RunContract;
import dev.agentsandbox.policy.text.Bounded;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * A path inside the run's {@link RunContract#WORKSPACE}, checked as text before any backend sees
 * it: written as {@code /workspace/a/b} or relative to the workspace ({@code a/b}); never {@code
 * ..}, never a {@code .} or empty segment past a leading {@code ./}, never a control character, a
 * segment over 255 bytes or a path over 4096 bytes. What the text cannot show (a segment that is a
 * symbolic link, a file where a folder was expected) each backend refuses inside the sandbox, never
 * following a link ({@link PathRefusedException}); the host never resolves it (docs/architecture.md
 * invariant 11).
 *
 * @param segments the path's segments below the workspace, in order; empty for the workspace itself
 */
public record WorkspacePath(List<String> segments) {
  /** The longest path accepted, in UTF-8 bytes, as Linux's {@code PATH_MAX}. */
  public static final int MAX_BYTES = 4096;

  /** The longest segment accepted, in UTF-8 bytes, as Linux's {@code NAME_MAX}. */
  public static final int MAX_SEGMENT_BYTES = 255;

  private static final String PREFIX = RunContract.WORKSPACE + "/";

  public WorkspacePath {
    segments = List.copyOf(segments);
    for (String segment : segments) {
      String problem = segmentProblem(segment);
      if (problem != null) {
        throw new InvalidWorkspacePathException(String.join("/", segments), problem);
      }
    }
  }

  /** The workspace itself. */
  public static WorkspacePath root() {
    return new WorkspacePath(List.of());
  }

  /**
   * Reads a path as a client wrote it.
   *
   * @throws InvalidWorkspacePathException naming what is wrong with it
   */
  public static WorkspacePath parse(String text) {
    Objects.requireNonNull(text, "text");
    if (text.getBytes(StandardCharsets.UTF_8).length > MAX_BYTES) {
      throw new InvalidWorkspacePathException(bounded(text), "longer than " + MAX_BYTES + " bytes");
    }
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c < 0x20 || c == 0x7f) {
        throw new InvalidWorkspacePathException(
            bounded(text), "holds a control character (U+" + String.format("%04X", (int) c) + ")");
      }
    }
    String rest;
    if (text.equals(RunContract.WORKSPACE) || text.equals(PREFIX)) {
      return root();
    } else if (text.startsWith(PREFIX)) {
      rest = text.substring(PREFIX.length());
    } else if (text.startsWith("/")) {
      throw new InvalidWorkspacePathException(
          bounded(text), "is outside " + RunContract.WORKSPACE + " (paths are confined to it)");
    } else if (text.equals(".") || text.equals("./") || text.isEmpty()) {
      return root();
    } else if (text.startsWith("./")) {
      rest = text.substring(2);
    } else {
      rest = text;
    }
    if (rest.endsWith("/")) {
      rest = rest.substring(0, rest.length() - 1);
    }
    List<String> segments = new ArrayList<>();
    for (String segment : rest.split("/", -1)) {
      String problem = segmentProblem(segment);
      if (problem != null) {
        throw new InvalidWorkspacePathException(bounded(text), problem);
      }
      segments.add(segment);
    }
    return new WorkspacePath(segments);
  }

  private static String segmentProblem(String segment) {
    if (segment.isEmpty()) {
      return "has an empty segment (//)";
    }
    if (segment.equals("..")) {
      return "has a .. segment (paths are confined to " + RunContract.WORKSPACE + ")";
    }
    if (segment.equals(".")) {
      return "has a . segment";
    }
    if (segment.indexOf('/') >= 0 || segment.indexOf('\0') >= 0) {
      return "has a segment with / or NUL in it";
    }
    if (segment.getBytes(StandardCharsets.UTF_8).length > MAX_SEGMENT_BYTES) {
      return "has a segment longer than " + MAX_SEGMENT_BYTES + " bytes";
    }
    for (int i = 0; i < segment.length(); i++) {
      char c = segment.charAt(i);
      if (c < 0x20 || c == 0x7f) {
        return "holds a control character";
      }
    }
    return null;
  }

  private static String bounded(String text) {
    return Bounded.text(text, 120, Bounded.Escape.CONTROL);
  }

  /** Whether this is the workspace itself. */
  public boolean isRoot() {
    return segments.isEmpty();
  }

  /** The path relative to the workspace ({@code a/b}; {@code .} for the workspace itself). */
  public String relative() {
    return segments.isEmpty() ? "." : String.join("/", segments);
  }

  /** The path as the workload sees it ({@code /workspace/a/b}). */
  public String absolute() {
    return segments.isEmpty() ? RunContract.WORKSPACE : PREFIX + String.join("/", segments);
  }

  /** The folder holding this path; the workspace for a top-level name. */
  public WorkspacePath parent() {
    if (segments.isEmpty()) {
      throw new IllegalStateException("the workspace has no parent inside the workspace");
    }
    return new WorkspacePath(segments.subList(0, segments.size() - 1));
  }

  /** The last segment; empty for the workspace itself. */
  public String name() {
    return segments.isEmpty() ? "" : segments.get(segments.size() - 1);
  }

  /** This path with {@code child}'s segments below it. */
  public WorkspacePath resolve(WorkspacePath child) {
    List<String> all = new ArrayList<>(segments);
    all.addAll(child.segments);
    return new WorkspacePath(all);
  }

  @Override
  public String toString() {
    return absolute();
  }
}
