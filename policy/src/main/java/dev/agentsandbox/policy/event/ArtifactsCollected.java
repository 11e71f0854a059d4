package dev.agentsandbox.policy.event;

import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * {@code agent_sandbox.artifacts} with {@code "collected": true}: what was kept of the run's {@code
 * /workspace/out}, and what was dropped and why, before the sandbox was removed.
 *
 * @param store where the files were kept
 * @param bytes the bytes kept
 * @param files each kept file
 * @param dropped each dropped entry named (at most the collector's limit)
 * @param droppedCount how many entries were dropped in all
 */
public record ArtifactsCollected(
    String store, long bytes, List<File> files, List<Dropped> dropped, long droppedCount)
    implements RunEvent {

  /**
   * A kept file.
   *
   * @param path its path under {@code out/}
   * @param size its size in bytes
   * @param sha256 its SHA-256, hex
   */
  public record File(String path, long size, String sha256) {
    public File {
      Objects.requireNonNull(path, "path");
      Objects.requireNonNull(sha256, "sha256");
    }
  }

  /**
   * A dropped entry.
   *
   * @param path its name as the archive gave it
   * @param reason why it was dropped ({@code symlink}, {@code over-max-bytes}, ...)
   */
  public record Dropped(String path, String reason) {
    public Dropped {
      Objects.requireNonNull(path, "path");
      Objects.requireNonNull(reason, "reason");
    }
  }

  public ArtifactsCollected {
    Objects.requireNonNull(store, "store");
    files = List.copyOf(files);
    dropped = List.copyOf(dropped);
  }

  @Override
  public EventType type() {
    return EventType.ARTIFACTS;
  }

  @Override
  public Map<String, Object> toTree() {
    return Fields.tree()
        .put("collected", true)
        .put("store", store)
        .put("bytes", bytes)
        .put(
            "files",
            files.stream()
                .map(
                    f ->
                        Fields.tree()
                            .put("path", f.path())
                            .put("size", f.size())
                            .put("sha256", f.sha256())
                            .build())
                .toList())
        .put(
            "dropped",
            dropped.stream()
                .map(d -> Fields.tree().put("path", d.path()).put("reason", d.reason()).build())
                .toList())
        .put("dropped_count", droppedCount)
        .build();
  }

  static ArtifactsCollected read(Object data) {
    Fields f = Fields.of(EventType.ARTIFACTS, data);
    ArtifactsCollected event =
        new ArtifactsCollected(
            f.string("store"),
            f.whole("bytes"),
            f.objects(
                "files", i -> new File(i.string("path"), i.whole("size"), i.string("sha256"))),
            f.has("dropped")
                ? f.objects("dropped", i -> new Dropped(i.string("path"), i.string("reason")))
                : List.of(),
            f.has("dropped_count") ? f.whole("dropped_count") : 0);
    f.done();
    return event;
  }
}
