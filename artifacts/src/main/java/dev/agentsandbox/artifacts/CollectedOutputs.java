package dev.agentsandbox.artifacts;

import java.util.List;

/**
 * What {@link OutputCollector} kept of a run's outputs and what it left out.
 *
 * @param kept the files now in the store, in archive order
 * @param dropped the first {@value OutputCollector#MAX_DROPPED_NAMED} files left out, each with why
 * @param droppedCount how many were left out in all (may exceed {@code dropped.size()})
 */
public record CollectedOutputs(List<StoredArtifact> kept, List<Dropped> dropped, int droppedCount) {
  public CollectedOutputs {
    kept = List.copyOf(kept);
    dropped = List.copyOf(dropped);
  }

  /** The bytes kept in all. */
  public long keptBytes() {
    return kept.stream().mapToLong(StoredArtifact::size).sum();
  }

  /** A file left out. */
  public record Dropped(String path, Reason reason) {}

  /** Why a file was left out; the wire name is the constant's name in lower case. */
  public enum Reason {
    /** A symbolic link: never followed, so it cannot point the collector outside the folder. */
    SYMLINK,
    /** A hard link: its content is another entry's. */
    HARDLINK,
    /** A character or block device. */
    DEVICE,
    /** A named pipe. */
    FIFO,
    /** Some other entry type the archive can carry (sockets, sparse or vendor entries). */
    UNSUPPORTED,
    /** A name outside the output folder, or one {@link ArtifactPath} refuses. */
    INVALID_PATH,
    /** A second entry of a name already kept, or a file where a kept file's folder is. */
    CONFLICT,
    /** Keeping it would pass the agent's byte cap. */
    OVER_SIZE_CAP,
    /** The agent's file-count cap was reached. */
    OVER_COUNT_CAP,
    /** The archive ended before the entry's declared length. */
    TRUNCATED;

    /** The name used in audit rows and API answers. */
    public String wireName() {
      return name().toLowerCase(java.util.Locale.ROOT);
    }
  }
}
