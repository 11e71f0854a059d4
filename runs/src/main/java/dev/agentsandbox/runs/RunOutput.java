package dev.agentsandbox.runs;

import dev.agentsandbox.policy.run.Redactor;
import dev.agentsandbox.policy.run.StreamRedactor;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A run's output as the world may see it: redacted as it arrives, the last {@code tailBytes} kept
 * for the result, and readable by followers while the run is live. Each line says whether it came
 * from the workload's standard error, where the backend keeps the two apart (a line is cut from its
 * own stream, so a partial line on one never swallows the other's); the tail is the two combined,
 * in the order their lines ended ({@link PlainText}).
 *
 * <p>Each stream is redacted by its own {@link StreamRedactor}: whole lines, and a line longer than
 * {@value StreamRedactor#MAX_LINE} bytes cut only where no secret can straddle the cut, so the
 * pieces joined again are redacted as the whole line would be. PEM private key blocks span lines:
 * everything from a {@code BEGIN ... PRIVATE KEY} line to its {@code END} line is replaced by one
 * mark.
 *
 * <p>One instance serves one stream of output with its end (a run's, or a session step's).
 * Thread-safe: the backend appends from one thread while followers read from others.
 */
public final class RunOutput {
  private final int tailBytes;
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition changed = lock.newCondition();
  private final Stream stdout;
  private final Stream stderr;
  private final Deque<Line> lines = new ArrayDeque<>();
  private long firstSeq;
  private long retainedBytes;
  private long totalBytes;
  private boolean closed;

  /**
   * One redacted piece of output: a line with its newline, or the part of a line that was cut off a
   * longer one or was the last and had none (then it has no newline).
   */
  public record Line(String text, boolean stderr) {
    /** Whether the piece ends its line. */
    public boolean ended() {
      return text.endsWith("\n");
    }
  }

  /** One of the workload's streams and its redaction state. */
  private record Stream(StreamRedactor redactor, boolean stderr) {}

  /**
   * @param redactor removes the run's secrets
   * @param tailBytes how much redacted output to keep (the result's tail)
   */
  public RunOutput(Redactor redactor, int tailBytes) {
    this.tailBytes = tailBytes;
    this.stdout = new Stream(new StreamRedactor(redactor), false);
    this.stderr = new Stream(new StreamRedactor(redactor), true);
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
      stream.redactor().write(chunk, text -> keep(new Line(text, stream.stderr())));
      changed.signalAll();
    } finally {
      lock.unlock();
    }
  }

  /** Marks the output complete, flushing a final line without a newline. */
  public void close() {
    lock.lock();
    try {
      if (closed) {
        return;
      }
      for (Stream stream : List.of(stdout, stderr)) {
        stream.redactor().close(text -> keep(new Line(text, stream.stderr())));
      }
      closed = true;
      changed.signalAll();
    } finally {
      lock.unlock();
    }
  }

  private void keep(Line line) {
    lines.addLast(line);
    retainedBytes += line.text().getBytes(StandardCharsets.UTF_8).length;
    while (retainedBytes > tailBytes && lines.size() > 1) {
      retainedBytes -= lines.removeFirst().text().getBytes(StandardCharsets.UTF_8).length;
      firstSeq++;
    }
  }

  /**
   * Both streams' lines as one text, in order: a piece that one stream left open (cut from a long
   * line, or its last line without a newline) is ended with a newline before the other stream's
   * next line, so that the two never run together into one line, where a secret printed half on
   * each would be whole again. Not thread-safe: one per reader.
   */
  public static final class PlainText {
    private Line last;

    /** The text to write for the next line. */
    public String next(Line line) {
      boolean apart = last != null && !last.ended() && last.stderr() != line.stderr();
      last = line;
      return apart ? "\n" + line.text() : line.text();
    }

    /** Something else was written in between (a notice that ends with a newline). */
    public void interrupted() {
      last = null;
    }
  }

  /** The redacted tail: at most {@code tailBytes} bytes of the newest whole lines. */
  public String tail() {
    lock.lock();
    try {
      StringBuilder all = new StringBuilder();
      PlainText plain = new PlainText();
      lines.forEach(line -> all.append(plain.next(line)));
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
