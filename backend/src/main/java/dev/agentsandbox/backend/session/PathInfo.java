package dev.agentsandbox.backend.session;

import java.time.Instant;
import java.util.Objects;

/**
 * What is at a path inside the workspace, read without following a symbolic link.
 *
 * @param path where
 * @param kind what it is
 * @param size its size in bytes (a regular file's apparent size, sparse or not; 0 otherwise)
 * @param mode its permission bits ({@code 0755})
 * @param modified when it was last modified
 */
public record PathInfo(WorkspacePath path, Kind kind, long size, int mode, Instant modified) {
  /** The kinds of thing a path can be. */
  public enum Kind {
    FILE("file"),
    FOLDER("folder"),
    SYMLINK("symlink"),
    OTHER("other");

    private final String wireName;

    Kind(String wireName) {
      this.wireName = wireName;
    }

    /** The kind as the API names it. */
    public String wireName() {
      return wireName;
    }
  }

  public PathInfo {
    Objects.requireNonNull(path, "path");
    Objects.requireNonNull(kind, "kind");
    Objects.requireNonNull(modified, "modified");
    if (size < 0) {
      throw new IllegalArgumentException("size is negative");
    }
  }
}
