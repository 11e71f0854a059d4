package dev.agentsandbox.runs;

import dev.agentsandbox.artifacts.InboundArchive;
import dev.agentsandbox.artifacts.InvalidInboundArchiveException;
import dev.agentsandbox.backend.session.ArchiveWritten;
import dev.agentsandbox.backend.session.PathInfo;
import dev.agentsandbox.backend.session.PathRefusedException;
import dev.agentsandbox.backend.session.SessionSandbox;
import dev.agentsandbox.backend.session.UnableToRunStepException;
import dev.agentsandbox.backend.session.WorkspacePath;
import dev.agentsandbox.policy.event.FilesTransferred;
import dev.agentsandbox.runs.session.FileForm;
import dev.agentsandbox.runs.session.FileRead;
import dev.agentsandbox.runs.session.FileWritten;
import dev.agentsandbox.runs.session.SessionError;
import dev.agentsandbox.runs.session.SessionRefusedException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.DigestInputStream;
import java.security.DigestOutputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;

/**
 * Puts files into a session's workspace and gets them out (docs/api.md, "Files"), each bounded by
 * the agent's {@code sessions.max_file_bytes}, each path checked as written before the backend
 * resolves it inside the sandbox, each operation audited as {@code agent_sandbox.files} when it
 * ends, succeeded or refused, with the size and SHA-256 of what crossed and never the content. A
 * tar is spooled and checked whole ({@link InboundArchive}) before anything of it is written; what
 * is read out is spooled whole before the first byte is answered. Spools are private temporary
 * files, deleted when the operation ends. Thread-safe.
 */
final class SessionFiles {
  /** The most entries a folder's listing names. */
  static final int MAX_LISTED = 10_000;

  private final SessionAudit audit;
  private final Path spool;

  SessionFiles(SessionAudit audit, Path spool) {
    this.audit = audit;
    this.spool = spool;
  }

  FileWritten put(
      LiveRun run, String actor, String pathText, boolean tar, InputStream body, long declared) {
    LiveSession session = run.session.orElseThrow();
    FileRow row =
        new FileRow(
            FilesTransferred.Op.PUT,
            tar ? FilesTransferred.Kind.FOLDER : FilesTransferred.Kind.FILE);
    String shown = pathText;
    try {
      WorkspacePath path = SessionFileRefusals.path(run, "put", pathText);
      shown = path.absolute();
      long cap = session.limits.maxFileBytes();
      if (declared > cap) {
        throw SessionFileRefusals.tooLarge(run, "put", shown, declared + " bytes", cap);
      }
      SessionSandbox sandbox = session.sandbox(run.runId());
      session.beginFileOperation(run.runId());
      try {
        FileWritten written =
            tar
                ? putArchive(run, sandbox, path, body, cap)
                : putFile(run, sandbox, path, body, cap);
        row.crossed(written.size(), written.sha256()).files(written.files()).bytes(written.bytes());
        audit.files(actor, run.spec.agent(), run.runId(), row.event(shown));
        return written;
      } finally {
        session.endFileOperation();
      }
    } catch (SessionRefusedException e) {
      audit.files(actor, run.spec.agent(), run.runId(), row.refused(e).event(shown));
      throw e;
    }
  }

  private FileWritten putFile(
      LiveRun run, SessionSandbox sandbox, WorkspacePath path, InputStream body, long cap) {
    MessageDigest sha = sha256();
    CappedStreams.CountingInput counted =
        new CappedStreams.CountingInput(new DigestInputStream(body, sha));
    long written;
    try {
      written = sandbox.putFile(path, counted, cap);
    } catch (PathRefusedException e) {
      throw SessionFileRefusals.refused(run, "put", path, e, cap);
    } catch (UnableToRunStepException e) {
      throw SessionFileRefusals.failed(run, "put", path, e);
    }
    if (counted.count > cap) {
      throw SessionFileRefusals.tooLarge(
          run, "put", path.absolute(), "more than " + cap + " bytes", cap);
    }
    return new FileWritten(
        path.absolute(),
        false,
        counted.count,
        HexFormat.of().formatHex(sha.digest()),
        1,
        0,
        written);
  }

  private FileWritten putArchive(
      LiveRun run, SessionSandbox sandbox, WorkspacePath folder, InputStream body, long cap) {
    Path file = null;
    try {
      file = Files.createTempFile(spool, "agent-sandbox-put-", ".tar");
      MessageDigest sha = sha256();
      long size;
      try (OutputStream out = new DigestOutputStream(Files.newOutputStream(file), sha)) {
        size = body.transferTo(new CappedStreams.BoundedOutput(out, cap));
      } catch (CappedStreams.BoundedOutput.Over e) {
        throw SessionFileRefusals.tooLarge(
            run, "put", folder.absolute(), "more than " + cap + " bytes", cap);
      }
      InboundArchive.check(file, cap);
      ArchiveWritten written;
      try (InputStream in = Files.newInputStream(file)) {
        written = sandbox.putArchive(folder, in, cap);
      }
      return new FileWritten(
          folder.absolute(),
          true,
          size,
          HexFormat.of().formatHex(sha.digest()),
          written.files(),
          written.folders(),
          written.bytes());
    } catch (InvalidInboundArchiveException e) {
      throw new SessionRefusedException(
          SessionError.INVALID_ARCHIVE,
          "put an archive under "
              + folder.absolute()
              + " in session "
              + run.runId()
              + ": "
              + e.getMessage()
              + " (nothing was written)",
          e.reason().map(r -> r.wireName()).orElse("unreadable"),
          null);
    } catch (PathRefusedException e) {
      throw SessionFileRefusals.refused(run, "put", folder, e, cap);
    } catch (UnableToRunStepException e) {
      throw SessionFileRefusals.failed(run, "put", folder, e);
    } catch (IOException e) {
      throw SessionFileRefusals.bodyFailed(run, folder, e);
    } finally {
      delete(file);
    }
  }

  FileRead get(LiveRun run, String actor, String pathText, FileForm form) {
    LiveSession session = run.session.orElseThrow();
    FileRow row = new FileRow(FilesTransferred.Op.GET, FilesTransferred.Kind.FILE);
    String shown = pathText;
    try {
      WorkspacePath path = SessionFileRefusals.path(run, "get", pathText);
      shown = path.absolute();
      long cap = session.limits.maxFileBytes();
      SessionSandbox sandbox = session.sandbox(run.runId());
      session.beginFileOperation(run.runId());
      try {
        FileRead read = read(run, sandbox, path, form, cap, row);
        audit.files(actor, run.spec.agent(), run.runId(), row.event(shown));
        return read;
      } finally {
        session.endFileOperation();
      }
    } catch (SessionRefusedException e) {
      audit.files(actor, run.spec.agent(), run.runId(), row.refused(e).event(shown));
      throw e;
    }
  }

  private FileRead read(
      LiveRun run,
      SessionSandbox sandbox,
      WorkspacePath path,
      FileForm form,
      long cap,
      FileRow row) {
    Path file = null;
    try {
      PathInfo info = sandbox.stat(path);
      switch (info.kind()) {
        case FILE -> {
          row.kind(FilesTransferred.Kind.FILE);
          if (info.size() > cap) {
            throw SessionFileRefusals.tooLarge(
                run, "get", path.absolute(), info.size() + " bytes", cap);
          }
          file = Files.createTempFile(spool, "agent-sandbox-get-", ".bin");
          MessageDigest sha = sha256();
          try (OutputStream out = new DigestOutputStream(Files.newOutputStream(file), sha)) {
            sandbox.readFile(path, out, cap);
          }
          FileRead.Bytes bytes =
              new FileRead.Bytes(
                  path.absolute(),
                  false,
                  file,
                  Files.size(file),
                  HexFormat.of().formatHex(sha.digest()),
                  0);
          row.crossed(bytes.size(), bytes.sha256());
          file = null;
          return bytes;
        }
        case FOLDER -> {
          if (form == FileForm.LISTING) {
            row.kind(FilesTransferred.Kind.LISTING);
            List<PathInfo> entries = sandbox.list(path, MAX_LISTED + 1);
            boolean truncated = entries.size() > MAX_LISTED;
            List<PathInfo> shown = truncated ? entries.subList(0, MAX_LISTED) : entries;
            row.listed(shown.size());
            return new FileRead.Listing(path.absolute(), shown, truncated);
          }
          row.kind(FilesTransferred.Kind.FOLDER);
          if (form == FileForm.FILE) {
            throw new SessionRefusedException(
                SessionError.NOT_ACCEPTABLE,
                "get "
                    + path.absolute()
                    + " of session "
                    + run.runId()
                    + ": it is a folder (ask for it with Accept: application/x-tar, or for its"
                    + " listing with Accept: application/json)");
          }
          file = Files.createTempFile(spool, "agent-sandbox-get-", ".tar");
          MessageDigest sha = sha256();
          List<String> skipped;
          try (OutputStream out = new DigestOutputStream(Files.newOutputStream(file), sha)) {
            skipped = sandbox.readFolder(path, out, cap);
          }
          FileRead.Bytes bytes =
              new FileRead.Bytes(
                  path.absolute(),
                  true,
                  file,
                  Files.size(file),
                  HexFormat.of().formatHex(sha.digest()),
                  skipped.size());
          row.crossed(bytes.size(), bytes.sha256())
              .files(regularFiles(file))
              .skipped(skipped.size());
          file = null;
          return bytes;
        }
        case SYMLINK ->
            throw new SessionRefusedException(
                SessionError.PATH_REFUSED,
                "get "
                    + path.absolute()
                    + " of session "
                    + run.runId()
                    + ": it is a symbolic link (links are never followed)",
                PathRefusedException.Reason.SYMLINK.wireName(),
                null);
        default ->
            throw new SessionRefusedException(
                SessionError.PATH_REFUSED,
                "get "
                    + path.absolute()
                    + " of session "
                    + run.runId()
                    + ": it is neither a regular file nor a folder",
                PathRefusedException.Reason.NOT_REGULAR.wireName(),
                null);
      }
    } catch (PathRefusedException e) {
      throw SessionFileRefusals.refused(run, "get", path, e, cap);
    } catch (UnableToRunStepException e) {
      throw SessionFileRefusals.failed(run, "get", path, e);
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(
          "spool " + path.absolute() + " of session " + run.runId(), e);
    } finally {
      delete(file);
    }
  }

  /** How many regular files a tar the backend wrote holds, for the audit row. */
  private static int regularFiles(Path tar) throws IOException {
    int files = 0;
    try (TarArchiveInputStream in = new TarArchiveInputStream(Files.newInputStream(tar))) {
      TarArchiveEntry entry;
      while ((entry = in.getNextEntry()) != null) {
        if (entry.isFile()) {
          files++;
        }
      }
    }
    return files;
  }

  private static void delete(Path file) {
    if (file != null) {
      try {
        Files.deleteIfExists(file);
      } catch (IOException e) {
        // A spool left behind is in the control plane's own temporary folder, mode 0600.
      }
    }
  }

  private static MessageDigest sha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every JDK has SHA-256", e);
    }
  }
}
