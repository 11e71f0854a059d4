package dev.agentsandbox.backend.docker;

import com.github.dockerjava.transport.DockerHttpClient;
import dev.agentsandbox.backend.RunContract;
import dev.agentsandbox.backend.SandboxException;
import dev.agentsandbox.policy.config.OutputLimits;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * A run's {@link RunContract#OUT_DIR}, read through the daemon's archive API ({@code GET
 * /containers/{id}/archive}) once the workload stopped, while the proxy still holds the workspace
 * volume (stopping it unmounts the tmpfs and loses it), into a private temporary file that teardown
 * deletes.
 *
 * <p>The archive is the workload's and is hostile, and its size is not the workspace's: a sparse
 * file of any apparent size fits in a small tmpfs, and the daemon archives it byte for byte. So
 * reading stops at {@link #bound}: the agent's {@code outputs.max_bytes} plus room for the tar
 * headers of its {@code outputs.max_files} and of what is dropped ({@link
 * RunContract#outArchiveLimit}). An archive cut there is handed on as what was read, and its reader
 * gets an {@link IOException} naming the cut where the archive stops: the entries before it are
 * judged as usual, and the rest is named as not read.
 *
 * <p>The archive is read through the client's HTTP transport rather than docker-java's {@code
 * copyArchiveFromContainerCmd}: closing that command's stream reads the rest of the response to its
 * end (13 s for a 3 GB sparse file here, without bound for a larger one), while closing the
 * transport's response drops the connection, and the daemon stops writing. Thread-safe.
 */
final class OutputArchive {
  private static final int CHUNK = 64 * 1024;

  private final DockerHttpClient http;
  private final String runId;
  private volatile long bound;
  private boolean read;
  private Path file;
  private boolean cut;
  private String problem;

  /** How much of a refusal's body is read for its message. */
  private static final int MAX_ERROR_BODY = 4096;

  OutputArchive(DockerHttpClient http, String runId, OutputLimits limits) {
    this.http = http;
    this.runId = runId;
    this.bound = bound(limits);
  }

  /**
   * The most archive bytes read for a run with {@code limits} ({@link
   * RunContract#outArchiveLimit}).
   */
  static long bound(OutputLimits limits) {
    return RunContract.outArchiveLimit(limits);
  }

  /**
   * Bounds the reading by another run's limits: a warm sandbox's, prepared before its run's own
   * configuration was read, gets the run's at the hand-over. No effect once read.
   */
  void limitTo(OutputLimits limits) {
    bound = bound(limits);
  }

  /** Reads the folder from {@code workloadId}, once; later calls do nothing. */
  synchronized void collect(String workloadId) {
    if (read) {
      return;
    }
    read = true;
    DockerHttpClient.Request request =
        DockerHttpClient.Request.builder()
            .method(DockerHttpClient.Request.Method.GET)
            .path(
                "/containers/"
                    + java.net.URLEncoder.encode(
                        workloadId, java.nio.charset.StandardCharsets.UTF_8)
                    + "/archive?path="
                    + java.net.URLEncoder.encode(
                        RunContract.OUT_DIR, java.nio.charset.StandardCharsets.UTF_8))
            .build();
    try (DockerHttpClient.Response response = http.execute(request)) {
      if (response.getStatusCode() != 200) {
        byte[] body = response.getBody().readNBytes(MAX_ERROR_BODY);
        throw new IOException(
            DockerErrors.describeAnswer(
                response.getStatusCode(),
                new String(body, java.nio.charset.StandardCharsets.UTF_8)));
      }
      file = Files.createTempFile("asb-" + runId + "-out", ".tar");
      try (OutputStream out = Files.newOutputStream(file)) {
        // Closing the response, not its body, drops what the daemon has not sent.
        cut = copyAtMost(response.getBody(), out, bound);
      }
    } catch (IOException | RuntimeException e) {
      problem =
          "reading "
              + RunContract.OUT_DIR
              + " of run "
              + runId
              + ": "
              + DockerErrors.describe(e)
              + " (did the workload remove the folder?)";
    }
  }

  /**
   * Copies at most {@code max} bytes; returns whether more were there (then the rest is left
   * unread: closing the daemon's stream ends its archive).
   */
  static boolean copyAtMost(InputStream in, OutputStream out, long max) throws IOException {
    byte[] buffer = new byte[CHUNK];
    long copied = 0;
    while (true) {
      long room = max - copied;
      // One byte past the room, to learn whether there is more: never zero, never negative.
      int want = room >= buffer.length ? buffer.length : (int) room + 1;
      int n = in.read(buffer, 0, want);
      if (n < 0) {
        return false;
      }
      if (n > room) {
        out.write(buffer, 0, (int) room);
        return true;
      }
      out.write(buffer, 0, n);
      copied += n;
    }
  }

  /**
   * The archive as collected: a tar whose top folder is {@code out}; empty when none was read.
   *
   * @throws SandboxException when reading it failed, saying why
   */
  synchronized Optional<InputStream> open() {
    if (problem != null) {
      throw new SandboxException(problem);
    }
    if (file == null) {
      return Optional.empty();
    }
    InputStream in;
    try {
      in = Files.newInputStream(file);
    } catch (IOException e) {
      throw new SandboxException(
          "reading the collected outputs of run " + runId + ": " + e.getMessage(), e);
    }
    return Optional.of(cut ? new Cut(in, bound) : in);
  }

  /** Deletes the collected file; what could not be deleted, for teardown's problems. */
  synchronized List<String> discard() {
    List<String> problems = new ArrayList<>();
    if (file != null) {
      try {
        Files.deleteIfExists(file);
      } catch (IOException e) {
        problems.add("collected outputs " + file + ": " + e.getMessage());
      }
    }
    return problems;
  }

  /** An archive cut at the bound: its end is a failure that says so, not a quiet end of file. */
  private static final class Cut extends FilterInputStream {
    private final long bound;

    Cut(InputStream in, long bound) {
      super(in);
      this.bound = bound;
    }

    @Override
    public int read() throws IOException {
      int b = super.read();
      return b < 0 ? cut() : b;
    }

    @Override
    public int read(byte[] buffer, int offset, int length) throws IOException {
      int n = super.read(buffer, offset, length);
      return n < 0 ? cut() : n;
    }

    /** Skipped by reading, so that skipping past the cut fails as reading past it does. */
    @Override
    public long skip(long n) throws IOException {
      byte[] buffer = new byte[(int) Math.min(CHUNK, Math.max(1, n))];
      long skipped = 0;
      while (skipped < n) {
        skipped += read(buffer, 0, (int) Math.min(buffer.length, n - skipped));
      }
      return skipped;
    }

    private int cut() throws IOException {
      throw new IOException(
          "the archive of "
              + RunContract.OUT_DIR
              + " was cut at "
              + bound
              + " bytes: past outputs.max_bytes plus room for tar headers, nothing more is read");
    }
  }
}
