package dev.agentsandbox.steprunner;

import dev.agentsandbox.backend.session.ArchiveWritten;
import dev.agentsandbox.backend.session.PathInfo;
import dev.agentsandbox.backend.session.PathRefusedException;
import dev.agentsandbox.backend.session.UnableToRunStepException;
import dev.agentsandbox.backend.session.WorkspacePath;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeoutException;

/**
 * The file operations of a session on the runner, as {@link
 * dev.agentsandbox.backend.session.SessionSandbox} names them. Every path is resolved by the
 * runner, inside the sandbox, one segment at a time without following a link; the host only checks
 * what comes back. Thread-safe.
 */
public final class RunnerFiles {
  private final RunnerClient client;

  RunnerFiles(RunnerClient client) {
    this.client = client;
  }

  private String attempt(String what, WorkspacePath path) {
    return what + " " + path + " in " + client.label();
  }

  /** Sends a request and waits for its answer, turning a refusal into the SPI's exceptions. */
  private Request.Answer ask(
      String what, WorkspacePath path, FrameType type, byte[] payload, int maxInfos) {
    Request request = new Request(maxInfos);
    int id = client.open(request);
    client.sendFrame(type, id, payload);
    return await(what, path, request, id);
  }

  private Request.Answer await(String what, WorkspacePath path, Request request, int id) {
    try {
      return request.await();
    } catch (Request.Refused e) {
      throw e.refusal().exception(attempt(what, path), path);
    } catch (TimeoutException e) {
      client.forget(id);
      throw new UnableToRunStepException(
          attempt(what, path)
              + ": no answer within "
              + RunnerClient.ANSWER_TIMEOUT.toSeconds()
              + " s (the sandbox is overloaded?)");
    } catch (IllegalStateException e) {
      throw new UnableToRunStepException(attempt(what, path) + ": " + e.getMessage());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new UnableToRunStepException(attempt(what, path) + ": interrupted", e);
    }
  }

  private PathInfo stat0(WorkspacePath path) {
    Request.Answer answer =
        ask("looking at", path, FrameType.STAT, new Payload.Writer().path(path).done(), 1);
    if (answer.infos().size() != 1) {
      throw new ProtocolViolationException("a stat answered without what is there");
    }
    Info info = Info.read(answer.infos().get(0));
    if (!info.name().isEmpty()) {
      throw new ProtocolViolationException("a stat answered with a name");
    }
    return info.at(path);
  }

  private List<PathInfo> list0(WorkspacePath folder, int max) {
    if (max < 0 || max > 100_000) {
      throw new IllegalArgumentException("max must be 0 to 100000: " + max);
    }
    Request.Answer answer =
        ask(
            "listing",
            folder,
            FrameType.LIST,
            new Payload.Writer().path(folder).u32(max).done(),
            max);
    List<PathInfo> entries = new ArrayList<>();
    String previous = null;
    for (Frame frame : answer.infos()) {
      Info info = Info.read(frame);
      WorkspacePath name = info.relative(true);
      if (previous != null && previous.compareTo(info.name()) >= 0) {
        throw new ProtocolViolationException("a listing out of name order, or with a name twice");
      }
      previous = info.name();
      entries.add(info.at(folder.resolve(name)));
    }
    return List.copyOf(entries);
  }

  private int mkdir0(WorkspacePath folder) {
    Request.Answer answer =
        ask(
            "creating the folder",
            folder,
            FrameType.MKDIR,
            new Payload.Writer().path(folder).done(),
            0);
    if (answer.value() > folder.segments().size()) {
      throw new ProtocolViolationException("a mkdir that made more folders than the path has");
    }
    return (int) answer.value();
  }

  private long putFile0(WorkspacePath path, InputStream content, long maxBytes) {
    if (path.isRoot()) {
      throw new PathRefusedException(
          path,
          PathRefusedException.Reason.WRONG_KIND,
          attempt("writing", path) + ": it is the workspace");
    }
    Request request = new Request(0);
    int id = client.open(request);
    client.sendFrame(FrameType.PUT, id, new Payload.Writer().path(path).done());
    long sent = 0;
    boolean tooLarge = false;
    try {
      byte[] buffer = new byte[Frame.MAX_PAYLOAD];
      int n;
      // Never more than one byte past the cap is read from the caller's stream.
      while (!request.answered()
          && (n = content.readNBytes(buffer, 0, (int) Math.min(buffer.length, maxBytes - sent + 1)))
              > 0) {
        if (sent + n > maxBytes) {
          tooLarge = true;
          break;
        }
        sent += n;
        client.sendFrame(FrameType.PUT_DATA, id, java.util.Arrays.copyOf(buffer, n));
      }
    } catch (IOException e) {
      abandon(id);
      throw new UnableToRunStepException(
          attempt("writing", path) + ": reading the content failed: " + e.getMessage(), e);
    } catch (RuntimeException e) {
      abandon(id);
      throw e;
    }
    boolean refusedEarly = request.answered();
    client.sendFrame(
        FrameType.PUT_END, id, new Payload.Writer().u32(tooLarge || refusedEarly ? 0 : 1).done());
    if (tooLarge) {
      try {
        await("writing", path, request, id);
      } catch (RuntimeException expected) {
        // The runner answers an abandoned put with a refusal; the cap is the reason that counts.
      }
      throw new PathRefusedException(
          path,
          PathRefusedException.Reason.TOO_LARGE,
          attempt("writing", path) + ": the content is over the cap of " + maxBytes + " bytes");
    }
    long written = await("writing", path, request, id).value();
    if (written != sent) {
      throw new ProtocolViolationException(
          "a put of " + sent + " bytes answered as " + written + " written");
    }
    return written;
  }

  private void abandon(int id) {
    try {
      client.sendFrame(FrameType.PUT_END, id, new Payload.Writer().u32(0).done());
    } catch (RuntimeException e) {
      // Gone already.
    }
  }

  private void readFile0(WorkspacePath path, OutputStream out, long maxBytes) {
    Transfer transfer = new Transfer(client);
    int id = client.open(transfer);
    transfer.id(id);
    String what = attempt("reading", path);
    client.sendFrame(
        FrameType.READ,
        id,
        new Payload.Writer().path(path).u64(maxBytes).u32(Transfer.WINDOW).done());
    try {
      Frame first = transfer.next();
      if (first.type() == FrameType.REFUSED) {
        throw Refusal.read(first).exception(what, path);
      }
      long size = sizeOf(first, maxBytes);
      long copied = 0;
      for (Frame frame = transfer.next(); ; frame = transfer.next()) {
        if (frame.type() == FrameType.DATA) {
          copied += frame.payload().length;
          if (copied > size) {
            throw new ProtocolViolationException("a read sent more than the size it announced");
          }
          write(out, frame.payload(), transfer, what);
          transfer.consumed(frame);
        } else if (frame.type() == FrameType.END && copied == size) {
          return;
        } else if (frame.type() == FrameType.REFUSED) {
          throw Refusal.read(frame).exception(what, path);
        } else {
          throw new ProtocolViolationException(
              frame + " in a read of " + size + " bytes at " + copied);
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      transfer.abandon();
      throw new UnableToRunStepException(what + ": interrupted", e);
    } catch (IllegalStateException e) {
      throw new UnableToRunStepException(what + ": " + e.getMessage());
    }
  }

  static long sizeOf(Frame frame, long maxBytes) {
    if (frame.type() != FrameType.SIZE) {
      throw new ProtocolViolationException(frame + " where a size was due");
    }
    Payload.Reader reader = new Payload.Reader(frame);
    long size = reader.u64();
    reader.end();
    if (size > maxBytes) {
      throw new ProtocolViolationException("a size of " + size + " over the cap of " + maxBytes);
    }
    return size;
  }

  static void write(OutputStream out, byte[] bytes, Transfer transfer, String what) {
    try {
      out.write(bytes);
    } catch (IOException e) {
      transfer.abandon();
      throw new UnableToRunStepException(what + ": writing it out failed: " + e.getMessage(), e);
    }
  }

  /** What is at {@code path}, not following a link (a link there is reported as one). */
  public PathInfo stat(WorkspacePath path) {
    return guarded("looking at", path, () -> stat0(path));
  }

  /** The folder's entries, at most {@code max} (up to 100,000), in name order. */
  public List<PathInfo> list(WorkspacePath folder, int max) {
    return guarded("listing", folder, () -> list0(folder, max));
  }

  /** Makes the folder and any missing parents; returns how many were made. */
  public int mkdir(WorkspacePath folder) {
    return guarded("creating the folder", folder, () -> mkdir0(folder));
  }

  /**
   * Writes the file whole or not at all (written beside it, then renamed over it); see the SPI's
   * {@code putFile}.
   */
  public long putFile(WorkspacePath path, InputStream content, long maxBytes) {
    return guarded("writing", path, () -> putFile0(path, content, maxBytes));
  }

  /** Copies the regular file to {@code out}; see the SPI's {@code readFile}. */
  public void readFile(WorkspacePath path, OutputStream out, long maxBytes) {
    guarded(
        "reading",
        path,
        () -> {
          readFile0(path, out, maxBytes);
          return null;
        });
  }

  /** A tar of the folder; see the SPI's {@code readFolder}. */
  public List<String> readFolder(WorkspacePath folder, OutputStream out, long maxBytes) {
    String what = attempt("archiving", folder);
    return guarded(
        "archiving", folder, () -> FolderArchives.read(client, folder, out, maxBytes, what));
  }

  /** Extracts a tar under the folder; see the SPI's {@code putArchive}. */
  public ArchiveWritten putArchive(WorkspacePath folder, InputStream tar, long maxBytes) {
    String what = attempt("extracting into", folder);
    return guarded(
        "extracting into", folder, () -> FolderArchives.put(this, folder, tar, maxBytes, what));
  }

  private <T> T guarded(String what, WorkspacePath path, java.util.function.Supplier<T> operation) {
    try {
      return operation.get();
    } catch (ProtocolViolationException e) {
      throw client.violated(attempt(what, path), e);
    }
  }

  RunnerClient client() {
    return client;
  }
}
