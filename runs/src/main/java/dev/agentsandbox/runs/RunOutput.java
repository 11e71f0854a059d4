package dev.agentsandbox.runs;

import dev.agentsandbox.policy.run.Redactor;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A run's output as the world may see it: redacted line by line as it arrives, the last {@code
 * tailBytes} kept for the result, and readable by followers while the run is live. Each line says
 * whether it came from the workload's standard error, where the backend keeps the two apart (a line
 * is cut from its own stream, so a partial line on one never swallows the other's); the tail is the
 * two combined, in the order their lines ended.
 *
 * <p>Redaction works on whole lines, since a secret split across two chunks would slip through a
 * chunk-wise pass; a line longer than {@value #MAX_LINE} characters is cut there. PEM private key
 * blocks span lines, so everything from a {@code BEGIN ... PRIVATE KEY} line to its {@code END}
 * line is replaced by one mark.
 *
 * <p>Thread-safe: the backend appends from one thread while followers read from others.
 */
public final class RunOutput {
  /** Longest line kept whole; longer ones are split so a line cannot grow without bound. */
  static final int MAX_LINE = 16 * 1024;

  private final Redactor redactor;
  private final int tailBytes;
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition changed = lock.newCondition();
  private final Stream stdout = new Stream(false);
  private final Stream stderr = new Stream(true);
  private final Deque<Line> lines = new ArrayDeque<>();
  private long firstSeq;
  private long retainedBytes;
  private long totalBytes;
  private boolean closed;

  /** One redacted line (with its newline, unless it was the last and had none). */
  public record Line(String text, boolean stderr) {}

  /** The partial line and the private-key state of one of the workload's streams. */
  private static final class Stream {
    final boolean stderr;
    final ByteArrayOutputStream partial = new ByteArrayOutputStream();
    boolean insidePrivateKey;

    Stream(boolean stderr) {
      this.stderr = stderr;
    }
  }

  /**
   * @param redactor removes the run's secrets
   * @param tailBytes how much redacted output to keep (the result's tail)
   */
  public RunOutput(Redactor redactor, int tailBytes) {
    this.redactor = redactor;
    this.tailBytes = tailBytes;
  }

  /** Appends a chunk of raw standard output (or combined output, where it is not kept apart). */
  public void append(byte[] chunk) {
    append(chunk, stdout);
  }

  /** Appends a chunk of raw standard error. */
  public void appendError(byte[] chunk) {
    append(chunk, stderr);
  }

  private void append(byte[] chunk, Stream stream) {
    lock.lock();
    try {
      if (closed) {
        return;
      }
      totalBytes += chunk.length;
      for (byte b : chunk) {
        if (b == '\n') {
          emit(stream, true);
        } else {
          stream.partial.write(b);
          if (stream.partial.size() >= MAX_LINE) {
            emit(stream, false);
          }
        }
      }
      changed.signalAll();
    } finally {
      lock.unlock();
    }
  }

  /** Marks the output complete, flushing a final line without a newline. */
  public void close() {
    lock.lock();
    try {
      for (Stream stream : List.of(stdout, stderr)) {
        if (stream.partial.size() > 0) {
          emit(stream, false);
        }
      }
      closed = true;
      changed.signalAll();
    } finally {
      lock.unlock();
    }
  }

  private void emit(Stream stream, boolean newline) {
    String raw = stream.partial.toString(StandardCharsets.UTF_8);
    stream.partial.reset();
    String kept;
    if (stream.insidePrivateKey) {
      if (raw.contains("-----END") && raw.contains("PRIVATE KEY-----")) {
        stream.insidePrivateKey = false;
      }
      return;
    } else if (raw.contains("-----BEGIN") && raw.contains("PRIVATE KEY-----")) {
      stream.insidePrivateKey = !raw.contains("-----END");
      kept = Redactor.MARK;
    } else {
      kept = redactor.redact(raw);
    }
    String line = newline ? kept + "\n" : kept;
    lines.addLast(new Line(line, stream.stderr));
    retainedBytes += line.getBytes(StandardCharsets.UTF_8).length;
    while (retainedBytes > tailBytes && lines.size() > 1) {
      retainedBytes -= lines.removeFirst().text().getBytes(StandardCharsets.UTF_8).length;
      firstSeq++;
    }
  }

  /** The redacted tail: at most {@code tailBytes} bytes of the newest whole lines. */
  public String tail() {
    lock.lock();
    try {
      StringBuilder all = new StringBuilder();
      lines.forEach(line -> all.append(line.text()));
      String joined = all.toString();
      byte[] bytes = joined.getBytes(StandardCharsets.UTF_8);
      if (bytes.length <= tailBytes) {
        return joined;
      }
      // One line longer than the tail: keep its end, and cut on a character boundary.
      int start = bytes.length - tailBytes;
      while (start < bytes.length && (bytes[start] & 0xC0) == 0x80) {
        start++;
      }
      return new String(bytes, start, bytes.length - start, StandardCharsets.UTF_8);
    } finally {
      lock.unlock();
    }
  }

  /** How many raw bytes the workload wrote in all. */
  public long totalBytes() {
    lock.lock();
    try {
      return totalBytes;
    } finally {
      lock.unlock();
    }
  }

  /** What a follower reads: lines from a sequence number on, and where to continue. */
  public record Chunk(List<Line> entries, long nextSeq, long skippedLines, boolean finished) {
    public Chunk {
      entries = List.copyOf(entries);
    }

    /** The lines' text, both streams together. */
    public List<String> lines() {
      return entries.stream().map(Line::text).toList();
    }
  }

  /**
   * Redacted lines from {@code seq} on, waiting up to {@code waitMillis} for some when there are
   * none yet. Lines that left the tail before the follower read them are counted as skipped.
   */
  public Chunk read(long seq, long waitMillis) throws InterruptedException {
    lock.lock();
    try {
      long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(waitMillis);
      while (!closed && seq >= firstSeq + lines.size()) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          break;
        }
        changed.awaitNanos(left);
      }
      long from = Math.max(seq, firstSeq);
      List<Line> out = new ArrayList<>();
      long index = firstSeq;
      for (Line line : lines) {
        if (index >= from) {
          out.add(line);
        }
        index++;
      }
      long next = firstSeq + lines.size();
      boolean finished = closed && from + out.size() >= next;
      return new Chunk(out, next, Math.max(0, from - seq), finished);
    } finally {
      lock.unlock();
    }
  }
}
