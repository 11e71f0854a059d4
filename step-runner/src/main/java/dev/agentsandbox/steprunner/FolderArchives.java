package dev.agentsandbox.steprunner;

import dev.agentsandbox.backend.session.ArchiveWritten;
import dev.agentsandbox.backend.session.InvalidWorkspacePathException;
import dev.agentsandbox.backend.session.PathInfo;
import dev.agentsandbox.backend.session.PathRefusedException;
import dev.agentsandbox.backend.session.UnableToRunStepException;
import dev.agentsandbox.backend.session.WorkspacePath;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.ArrayList;
import java.util.List;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;

/**
 * Tars in and out of the workspace, with no tar code in the runner: a put tar is read and checked
 * here (commons-compress) and becomes plain mkdir and put operations; a got folder comes back as a
 * walk's entries, checked here one by one, and is written here as a tar.
 */
final class FolderArchives {
  /** The most skipped names a folder's read reports (the rest are counted only). */
  static final int MAX_SKIPPED = 1000;

  private FolderArchives() {}

  static List<String> read(
      RunnerClient client, WorkspacePath folder, OutputStream out, long maxBytes, String what) {
    Transfer transfer = new Transfer(client);
    int id = client.open(transfer);
    transfer.id(id);
    client.sendFrame(
        FrameType.WALK,
        id,
        new Payload.Writer().path(folder).u64(maxBytes).u32(Transfer.WINDOW).done());
    List<String> skipped = new ArrayList<>();
    try {
      Frame first = transfer.next();
      if (first.type() == FrameType.REFUSED) {
        throw Refusal.read(first).exception(what, folder);
      }
      RunnerFiles.sizeOf(first, maxBytes);
      TarArchiveOutputStream tar = new TarArchiveOutputStream(new Unclosed(out));
      tar.setLongFileMode(TarArchiveOutputStream.LONGFILE_POSIX);
      tar.setBigNumberMode(TarArchiveOutputStream.BIGNUMBER_POSIX);
      long total = 0;
      long fileLeft = 0;
      for (Frame frame = transfer.next(); ; frame = transfer.next()) {
        switch (frame.type()) {
          case DATA -> {
            if (frame.payload().length > fileLeft) {
              throw new ProtocolViolationException("a walk sent more of a file than its size");
            }
            fileLeft -= frame.payload().length;
            tar.write(frame.payload());
            if (fileLeft == 0) {
              tar.closeArchiveEntry();
            }
          }
          case INFO, SKIPPED, END, REFUSED -> {
            if (fileLeft != 0) {
              throw new ProtocolViolationException("a walk moved on before a file's end");
            }
            if (frame.type() == FrameType.REFUSED) {
              throw Refusal.read(frame).exception(what, folder);
            }
            if (frame.type() == FrameType.END) {
              tar.finish();
              tar.flush();
              return List.copyOf(skipped);
            }
            if (frame.type() == FrameType.SKIPPED) {
              Payload.Reader reader = new Payload.Reader(frame);
              String name = reader.str(WorkspacePath.MAX_BYTES);
              reader.end();
              if (skipped.size() < MAX_SKIPPED) {
                skipped.add(Refusal.printable(name));
              }
            } else {
              Info info = Info.read(frame);
              WorkspacePath name = info.relative(false);
              total += info.size();
              if (total > maxBytes) {
                throw new ProtocolViolationException(
                    "a walk past the cap of " + maxBytes + " bytes");
              }
              fileLeft = entry(tar, info, name);
            }
          }
          default -> throw new ProtocolViolationException(frame + " in a walk");
        }
        transfer.consumed(frame);
      }
    } catch (IOException e) {
      transfer.abandon();
      throw new UnableToRunStepException(
          what + ": writing the archive failed: " + e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      transfer.abandon();
      throw new UnableToRunStepException(what + ": interrupted", e);
    } catch (IllegalStateException e) {
      throw new UnableToRunStepException(what + ": " + e.getMessage());
    }
  }

  /** Starts the entry; returns how many content bytes follow. */
  private static long entry(TarArchiveOutputStream tar, Info info, WorkspacePath name)
      throws IOException {
    boolean folder = info.kind() == PathInfo.Kind.FOLDER;
    if (!folder && info.kind() != PathInfo.Kind.FILE) {
      throw new ProtocolViolationException("a walk entry that is neither a file nor a folder");
    }
    TarArchiveEntry entry = new TarArchiveEntry(name.relative() + (folder ? "/" : ""));
    // Only permission bits: no set-user-id or sticky bit comes out of a sandbox.
    entry.setMode((folder ? 040000 : 0100000) | (info.mode() & 0777));
    entry.setModTime(java.nio.file.attribute.FileTime.from(info.modified()));
    entry.setSize(folder ? 0 : info.size());
    tar.putArchiveEntry(entry);
    if (folder || info.size() == 0) {
      tar.closeArchiveEntry();
      return 0;
    }
    return info.size();
  }

  static ArchiveWritten put(
      RunnerFiles files, WorkspacePath folder, InputStream in, long maxBytes, String what) {
    Capped capped = new Capped(in, maxBytes);
    int madeFiles = 0;
    int folders = 0;
    long bytes = 0;
    files.mkdir(folder);
    try (TarArchiveInputStream tar = new TarArchiveInputStream(capped)) {
      TarArchiveEntry entry;
      while ((entry = tar.getNextEntry()) != null) {
        WorkspacePath path = folder.resolve(checked(entry, what));
        if (entry.isDirectory()) {
          files.mkdir(path);
          folders++;
        } else {
          bytes += files.putFile(path, tar, Math.max(0, maxBytes - bytes));
          madeFiles++;
        }
      }
    } catch (IOException e) {
      if (capped.over) {
        throw new PathRefusedException(
            folder,
            PathRefusedException.Reason.TOO_LARGE,
            what + ": the archive is over the cap of " + maxBytes + " bytes");
      }
      throw new UnableToRunStepException(what + ": reading the archive: " + e.getMessage(), e);
    }
    return new ArchiveWritten(madeFiles, folders, bytes);
  }

  /** The entry's name as a path below the folder: only regular files and folders, never a link. */
  private static WorkspacePath checked(TarArchiveEntry entry, String what) {
    String name = entry.getName();
    String problem = null;
    if (entry.isSymbolicLink() || entry.isLink()) {
      problem = "is a link";
    } else if (!entry.isDirectory() && !entry.isFile() || entry.isSparse()) {
      problem = "is neither a regular file nor a folder";
    } else if (name.startsWith("/")) {
      problem = "is absolute";
    }
    String relative = name.startsWith("./") ? name.substring(2) : name;
    relative = relative.endsWith("/") ? relative.substring(0, relative.length() - 1) : relative;
    if (problem == null && relative.isEmpty()) {
      problem = "is empty";
    }
    if (problem == null) {
      try {
        return new WorkspacePath(List.of(relative.split("/", -1)));
      } catch (InvalidWorkspacePathException e) {
        problem = e.getMessage();
      }
    }
    throw new UnableToRunStepException(
        what
            + ": entry '"
            + Refusal.printable(name)
            + "' "
            + problem
            + " (archives are checked before they reach a sandbox; nothing after it was written)");
  }

  /** Fails a read past the cap, and says so, so that an over-large archive is named as such. */
  private static final class Capped extends FilterInputStream {
    private long left;
    private boolean over;

    Capped(InputStream in, long cap) {
      super(in);
      this.left = cap;
    }

    @Override
    public int read() throws IOException {
      byte[] one = new byte[1];
      return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      int n = super.read(b, off, (int) Math.min(len, left + 1));
      if (n > 0) {
        left -= n;
        if (left < 0) {
          over = true;
          throw new IOException("over the cap");
        }
      }
      return n;
    }
  }

  /** Keeps the caller's stream open when the tar writer is done with it. */
  private static final class Unclosed extends java.io.FilterOutputStream {
    Unclosed(OutputStream out) {
      super(out);
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      out.write(b, off, len);
    }

    @Override
    public void close() throws IOException {
      flush();
    }
  }
}
