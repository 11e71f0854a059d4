package dev.agentsandbox.policy.event;

import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * {@code agent_sandbox.files}: one put into or get out of a session's workspace, when it ended,
 * succeeded or refused (docs/api.md, "Audit rows of a session"). Never a file's content.
 *
 * @param op {@code put} or {@code get}
 * @param path the path asked for, under {@code /workspace}
 * @param kind what crossed: one regular file, a folder as a tar, or a folder's listing
 * @param size the bytes that crossed
 * @param sha256 the SHA-256 of the bytes that crossed
 * @param files how many files a tar held
 * @param bytes how many bytes of file content a put wrote
 * @param skipped how many links and special files a folder's tar left out
 * @param error the error code of a refusal
 * @param reason the reason of a {@code path_refused}
 */
public record FilesTransferred(
    Op op,
    String path,
    Kind kind,
    Optional<Long> size,
    Optional<String> sha256,
    Optional<Long> files,
    Optional<Long> bytes,
    Optional<Long> skipped,
    Optional<String> error,
    Optional<String> reason)
    implements RunEvent {

  /** Which way the bytes went. */
  public enum Op {
    PUT("put"),
    GET("get");

    private final String wireName;

    Op(String wireName) {
      this.wireName = wireName;
    }

    public String wireName() {
      return wireName;
    }

    static Optional<Op> fromWireName(String text) {
      for (Op o : values()) {
        if (o.wireName.equals(text)) {
          return Optional.of(o);
        }
      }
      return Optional.empty();
    }
  }

  /** What was put or got. */
  public enum Kind {
    FILE("file"),
    FOLDER("folder"),
    LISTING("listing");

    private final String wireName;

    Kind(String wireName) {
      this.wireName = wireName;
    }

    public String wireName() {
      return wireName;
    }

    static Optional<Kind> fromWireName(String text) {
      for (Kind k : values()) {
        if (k.wireName.equals(text)) {
          return Optional.of(k);
        }
      }
      return Optional.empty();
    }
  }

  public FilesTransferred {
    Objects.requireNonNull(op, "op");
    Objects.requireNonNull(path, "path");
    Objects.requireNonNull(kind, "kind");
    Objects.requireNonNull(size, "size");
    Objects.requireNonNull(sha256, "sha256");
    Objects.requireNonNull(files, "files");
    Objects.requireNonNull(bytes, "bytes");
    Objects.requireNonNull(skipped, "skipped");
    Objects.requireNonNull(error, "error");
    Objects.requireNonNull(reason, "reason");
  }

  /** Whether the operation was refused. */
  public boolean refused() {
    return error.isPresent();
  }

  @Override
  public EventType type() {
    return EventType.FILES;
  }

  @Override
  public Map<String, Object> toTree() {
    return Fields.tree()
        .put("op", op.wireName())
        .put("path", path)
        .put("kind", kind.wireName())
        .putIfPresent("size", size)
        .putIfPresent("sha256", sha256)
        .putIfPresent("files", files)
        .putIfPresent("bytes", bytes)
        .putIfPresent("skipped", skipped)
        .putIfPresent("error", error)
        .putIfPresent("reason", reason)
        .build();
  }

  static FilesTransferred read(Object data) {
    Fields f = Fields.of(EventType.FILES, data);
    FilesTransferred event =
        new FilesTransferred(
            f.named("op", Op::fromWireName, Op.GET),
            f.string("path"),
            f.named("kind", Kind::fromWireName, Kind.FILE),
            f.optionalWhole("size"),
            f.optionalString("sha256"),
            f.optionalWhole("files"),
            f.optionalWhole("bytes"),
            f.optionalWhole("skipped"),
            f.optionalString("error"),
            f.optionalString("reason"));
    f.done();
    return event;
  }
}
