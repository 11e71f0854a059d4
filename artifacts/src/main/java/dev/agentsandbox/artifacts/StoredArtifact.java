package dev.agentsandbox.artifacts;

import java.util.Objects;
import java.util.regex.Pattern;

/**
 * One file kept from a run's outputs.
 *
 * @param path its path relative to the run's output folder, as {@link ArtifactPath} accepts it
 * @param size its length in bytes
 * @param sha256 the SHA-256 of its content, 64 lower-case hex digits
 */
public record StoredArtifact(String path, long size, String sha256) {
  private static final Pattern HEX64 = Pattern.compile("[0-9a-f]{64}");

  public StoredArtifact {
    ArtifactPath.require(path);
    if (size < 0) {
      throw new IllegalArgumentException("size must not be negative");
    }
    Objects.requireNonNull(sha256, "sha256");
    if (!HEX64.matcher(sha256).matches()) {
      throw new IllegalArgumentException("sha256 must be 64 lower-case hex digits");
    }
  }
}
