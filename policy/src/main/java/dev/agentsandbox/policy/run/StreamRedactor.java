package dev.agentsandbox.policy.run;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.function.Consumer;
import java.util.regex.Matcher;

/**
 * One stream of a run's output (its standard output, or its standard error), redacted as it
 * arrives, in pieces whose concatenation is what {@link Redactor#redact} gives each whole line.
 *
 * <p>A line is redacted whole when it ends. A line that grows past {@code maxLine} is cut so that
 * it cannot grow without bound, but only where {@link Redactor#holdFrom} says a cut is safe: the
 * text before the cut is redacted and passed on, the rest is held (at most {@code maxHold}
 * characters) and redacted with what follows. So a secret is never split between two pieces,
 * whatever the chunks the bytes came in, wherever the cut falls (16, 32, 48 KiB into a line) and
 * however many {@code \r} progress updates the line holds. Where what must be held is longer than
 * {@code maxHold} (a secret-shaped run of more than 8 KiB reaching the cut), it is replaced by
 * {@link Redactor#MARK} together with the rest of its line.
 *
 * <p>A line holding the first line of a PEM private key block becomes one {@link Redactor#MARK},
 * and the lines after it are dropped up to and including the block's last line (all of them, if it
 * never ends). The markers are found across cuts too.
 *
 * <p>Not thread-safe: one writer at a time (RunOutput calls it under its lock).
 */
public final class StreamRedactor {
  /** Longest line kept whole; a longer one is cut where a cut is safe. */
  public static final int MAX_LINE = 16 * 1024;

  /** The most a cut holds back for what follows; more than this is withheld with its line. */
  public static final int MAX_HOLD = 8 * 1024;

  /** The end of withheld text kept to find a key marker that straddles a cut. */
  private static final int MARKER_OVERLAP = 128;

  private final Redactor redactor;
  private final int maxLine;
  private final int maxHold;
  private final ByteArrayOutputStream pending = new ByteArrayOutputStream();
  private String held = "";
  private String scanned = "";

  /** Something of the current line was passed on (so its newline is too). */
  private boolean lineShown;

  /** The rest of the current line is withheld (its start was passed on or marked). */
  private boolean withholding;

  /** The current line began inside a private key block: none of it is passed on. */
  private boolean lineHidden;

  /** Inside a private key block: the lines that start now are hidden. */
  private boolean insideKey;

  public StreamRedactor(Redactor redactor) {
    this(redactor, MAX_LINE, MAX_HOLD);
  }

  /**
   * @param maxLine how long a line may grow before it is cut
   * @param maxHold how much a cut may hold back; raised to twice the longest env value, and {@code
   *     maxLine} to twice that, so that a cut always makes progress and never has to withhold an
   *     env value
   */
  StreamRedactor(Redactor redactor, int maxLine, int maxHold) {
    this.redactor = redactor;
    this.maxHold = Math.max(maxHold, 2 * redactor.longestSecret() + Redactor.LEAD_HOLD);
    this.maxLine = Math.max(maxLine, 2 * this.maxHold);
  }

  /**
   * Takes a chunk of raw output; each redacted piece goes to {@code sink}. A piece that ends a line
   * ends with {@code \n}; one cut from a longer line does not, and its line goes on in the next.
   */
  public void write(byte[] chunk, Consumer<String> sink) {
    for (byte b : chunk) {
      if (b == '\n') {
        endLine(true, sink);
      } else {
        pending.write(b);
        if (pending.size() + held.length() >= maxLine) {
          cut(sink);
        }
      }
    }
  }

  /** Ends the stream: a last line without a newline is passed on as it is. */
  public void close(Consumer<String> sink) {
    endLine(false, sink);
  }

  private void cut(Consumer<String> sink) {
    String window = held + decodeComplete();
    held = "";
    if (lineHidden || withholding) {
      scan(window);
      return;
    }
    if (Redactor.beginsPrivateKey(window)) {
      startKey(window, sink);
      return;
    }
    int cut = redactor.holdFrom(window);
    if (window.length() - cut > maxHold) {
      // Too long to hold: a secret-shaped run that may go on. What it might be is never shown.
      show(redactor.redact(window.substring(0, cut)) + Redactor.MARK, sink);
      withholding = true;
      scanned = tail(window);
      return;
    }
    if (cut > 0) {
      show(redactor.redact(window.substring(0, cut)), sink);
    }
    held = window.substring(cut);
  }

  private void endLine(boolean newline, Consumer<String> sink) {
    String window = held + decodeAll();
    held = "";
    String end = newline ? "\n" : "";
    if (lineHidden || withholding) {
      scan(window);
      if (!lineHidden && lineShown) {
        show(end, sink);
      }
    } else if (Redactor.beginsPrivateKey(window)) {
      startKey(window, sink);
      show(end, sink);
    } else if (!window.isEmpty() || newline) {
      show(redactor.redact(window) + end, sink);
    }
    lineShown = false;
    withholding = false;
    scanned = "";
    lineHidden = insideKey;
  }

  /** The window holds a key's first line: its line becomes one mark, and the rest is withheld. */
  private void startKey(String window, Consumer<String> sink) {
    show(Redactor.MARK, sink);
    withholding = true;
    scanned = "";
    scan(window);
  }

  private void show(String text, Consumer<String> sink) {
    if (!text.isEmpty()) {
      lineShown = true;
      sink.accept(text);
    }
  }

  /**
   * Follows the key markers through withheld text, in order, counting each once: a marker that lies
   * wholly in the overlap kept from the last scan was counted then.
   */
  private void scan(String text) {
    String seen = scanned + text;
    int from = 0;
    while (true) {
      Matcher m = (insideKey ? Redactor.KEY_END : Redactor.KEY_BEGIN).matcher(seen);
      if (!m.find(from)) {
        break;
      }
      if (m.end() > scanned.length()) {
        insideKey = !insideKey;
      }
      from = m.end();
    }
    scanned = tail(seen);
  }

  private static String tail(String text) {
    return text.substring(Math.max(0, text.length() - MARKER_OVERLAP));
  }

  private String decodeAll() {
    String text = pending.toString(StandardCharsets.UTF_8);
    pending.reset();
    return text;
  }

  /** The pending bytes up to the last whole UTF-8 character; an unfinished one stays pending. */
  private String decodeComplete() {
    byte[] bytes = pending.toByteArray();
    int end = completeUpTo(bytes);
    pending.reset();
    pending.write(bytes, end, bytes.length - end);
    return new String(bytes, 0, end, StandardCharsets.UTF_8);
  }

  static int completeUpTo(byte[] bytes) {
    int n = bytes.length;
    for (int back = 1; back <= 4 && back <= n; back++) {
      int b = bytes[n - back] & 0xFF;
      if (b < 0x80) {
        return n;
      }
      if (b >= 0xC0) {
        int length = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : 2;
        return back < length ? n - back : n;
      }
    }
    return n;
  }
}
