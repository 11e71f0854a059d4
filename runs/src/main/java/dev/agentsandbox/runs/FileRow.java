package dev.agentsandbox.runs;

import dev.agentsandbox.policy.event.FilesTransferred;
import dev.agentsandbox.runs.session.SessionRefusedException;
import java.util.Optional;

/**
 * What one file operation of a session has found out so far, for its {@code agent_sandbox.files}
 * row ({@link FilesTransferred}) once it ends, succeeded or refused. Not thread-safe: one
 * operation's own.
 */
final class FileRow {
  private final FilesTransferred.Op op;
  private FilesTransferred.Kind kind;
  private Long size;
  private String sha256;
  private Long files;
  private Long bytes;
  private Long skipped;
  private String error;
  private String reason;

  FileRow(FilesTransferred.Op op, FilesTransferred.Kind kind) {
    this.op = op;
    this.kind = kind;
  }

  FileRow kind(FilesTransferred.Kind what) {
    this.kind = what;
    return this;
  }

  /** The bytes that crossed and their hash. */
  FileRow crossed(long count, String hash) {
    this.size = count;
    this.sha256 = hash;
    return this;
  }

  /** A listing's entries, counted as its size. */
  FileRow listed(long entries) {
    this.size = entries;
    return this;
  }

  FileRow files(long count) {
    this.files = count;
    return this;
  }

  FileRow bytes(long count) {
    this.bytes = count;
    return this;
  }

  FileRow skipped(long count) {
    this.skipped = count;
    return this;
  }

  FileRow refused(SessionRefusedException e) {
    this.error = e.error().code();
    this.reason = e.reason().orElse(null);
    return this;
  }

  /** The row for the operation on {@code path}. */
  FilesTransferred event(String path) {
    return new FilesTransferred(
        op,
        path,
        kind,
        Optional.ofNullable(size),
        Optional.ofNullable(sha256),
        Optional.ofNullable(files),
        Optional.ofNullable(bytes),
        Optional.ofNullable(skipped),
        Optional.ofNullable(error),
        Optional.ofNullable(reason));
  }
}
