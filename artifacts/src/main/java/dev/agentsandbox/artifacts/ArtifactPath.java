package dev.agentsandbox.artifacts;

import java.util.Optional;

/**
 * The grammar of an artifact's name: a relative path inside the run's output folder. Pure; the one
 * check used when collecting, storing and downloading, so a name that could not be collected cannot
 * be asked for either.
 *
 * <p>Accepted: segments separated by {@code /}, none empty, {@code .} or {@code ..}; no leading
 * {@code /}; no backslash, NUL or other control character (which would also break the folder
 * store's {@code SHA256SUMS} lines); at most {@value #MAX_LENGTH} bytes in UTF-8 and {@value
 * #MAX_SEGMENT} per segment.
 */
public final class ArtifactPath {
  /** The longest accepted path, in UTF-8 bytes. */
  public static final int MAX_LENGTH = 1024;

  /** The longest accepted segment, in UTF-8 bytes (most file systems' name limit). */
  public static final int MAX_SEGMENT = 255;

  private ArtifactPath() {}

  /** Why {@code path} is not an acceptable artifact name, or empty when it is. */
  public static Optional<String> problem(String path) {
    if (path == null || path.isEmpty()) {
      return Optional.of("empty path");
    }
    if (path.getBytes(java.nio.charset.StandardCharsets.UTF_8).length > MAX_LENGTH) {
      return Optional.of("longer than " + MAX_LENGTH + " bytes");
    }
    if (path.startsWith("/")) {
      return Optional.of("absolute path");
    }
    for (int i = 0; i < path.length(); i++) {
      char c = path.charAt(i);
      if (c < 0x20 || c == 0x7f || c == '\\' || Character.isSurrogate(c) && !validPair(path, i)) {
        return Optional.of("contains a control character, a backslash or broken UTF-16");
      }
    }
    for (String segment : path.split("/", -1)) {
      if (segment.isEmpty()) {
        return Optional.of("empty segment");
      }
      if (segment.equals(".") || segment.equals("..")) {
        return Optional.of("'" + segment + "' segment escapes or repeats the folder");
      }
      if (segment.getBytes(java.nio.charset.StandardCharsets.UTF_8).length > MAX_SEGMENT) {
        return Optional.of("a segment is longer than " + MAX_SEGMENT + " bytes");
      }
    }
    return Optional.empty();
  }

  /** Returns {@code path} when acceptable; otherwise throws naming the problem. */
  public static String require(String path) {
    Optional<String> problem = problem(path);
    if (problem.isPresent()) {
      throw new InvalidArtifactPathException(path, problem.get());
    }
    return path;
  }

  private static boolean validPair(String s, int i) {
    char c = s.charAt(i);
    if (Character.isHighSurrogate(c)) {
      return i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1));
    }
    return i > 0 && Character.isHighSurrogate(s.charAt(i - 1));
  }
}
