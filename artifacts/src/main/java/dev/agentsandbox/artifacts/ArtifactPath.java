package dev.agentsandbox.artifacts;

import dev.agentsandbox.policy.text.ShownText;
import java.util.Optional;

/**
 * The grammar of an artifact's name: a relative path inside the run's output folder. Pure; the one
 * check used when collecting, storing and downloading, so a name that could not be collected cannot
 * be asked for either.
 *
 * <p>Accepted: segments separated by {@code /}, none empty, {@code .} or {@code ..}; no leading
 * {@code /}; no backslash; no character {@link ShownText.Rule#NAME} refuses — control characters
 * (which would also break the folder store's {@code SHA256SUMS} lines), bidirectional controls
 * (U+202E would show {@code report\u202Eexe.txt} as {@code reporttxt.exe}), invisible characters
 * and spaces other than U+0020 (two names that look the same), unpaired surrogates; at most {@value
 * #MAX_LENGTH} bytes in UTF-8 and {@value #MAX_SEGMENT} per segment. The console offers the last
 * segment as the name a download is saved under, so what a reviewer reads is what is saved.
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
    if (path.indexOf('\\') >= 0) {
      return Optional.of("contains a backslash");
    }
    Optional<ShownText.Finding> unsafe = ShownText.firstRefused(path, ShownText.Rule.NAME);
    if (unsafe.isPresent()) {
      return Optional.of("contains " + unsafe.get().describe());
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
}
