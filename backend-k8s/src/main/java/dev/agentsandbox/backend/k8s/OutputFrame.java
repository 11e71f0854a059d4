package dev.agentsandbox.backend.k8s;

import java.io.IOException;
import java.io.OutputStream;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Base64;
import java.util.HexFormat;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads the framed tar stream that the agent pod's {@value SandboxPods#COLLECT} sidecar writes to
 * its log ({@link SandboxPods#COLLECT_SCRIPT}): a {@value #BEGIN} line, the tar of {@code out/} in
 * base64 lines, then {@code agent-sandbox-out end BYTES SHA256}.
 *
 * <p>The log is read as hostile: lines before the begin line are skipped; after it, only base64
 * lines up to the end line are taken; a line longer than {@value #MAX_LINE} characters, any other
 * line, malformed base64, a missing end line, a byte count or SHA-256 that does not match what was
 * decoded, or more than the allowed bytes refuses the whole stream with a {@link FrameException}
 * that says which. Only a verified stream is handed on, to the artifacts module's collector, which
 * judges the tar's entries (links, devices, escaping names, caps) as for the other backends.
 */
final class OutputFrame {
  static final String BEGIN = "agent-sandbox-out begin v1";
  static final String END = "agent-sandbox-out end";

  /** The longest line read; busybox's base64 writes 76 characters a line. */
  static final int MAX_LINE = 4096;

  private static final Pattern END_LINE =
      Pattern.compile(Pattern.quote(END) + " ([0-9]{1,19}) ([0-9a-f]{64})");
  private static final Pattern BASE64_LINE = Pattern.compile("[A-Za-z0-9+/=]*");

  /** Why a stream was refused; the message says what was wrong, never the stream's content. */
  static final class FrameException extends Exception {
    FrameException(String message) {
      super(message);
    }
  }

  private OutputFrame() {}

  /**
   * Decodes the stream in {@code log} into {@code target}.
   *
   * @param maxBytes the most decoded bytes accepted
   * @return the decoded tar's length
   * @throws FrameException when the stream is refused; {@code target} then holds no verified data
   * @throws IOException when reading the log or writing {@code target} fails
   */
  static long decode(Reader log, Path target, long maxBytes) throws IOException, FrameException {
    MessageDigest sha = sha256();
    long written = 0;
    StringBuilder pending = new StringBuilder();
    boolean begun = false;
    boolean padded = false;
    int lineNumber = 0;
    try (OutputStream out = Files.newOutputStream(target)) {
      String line;
      while ((line = readLine(log)) != null) {
        lineNumber++;
        if (!begun) {
          begun = line.equals(BEGIN);
          continue;
        }
        if (line.startsWith(END)) {
          Matcher end = END_LINE.matcher(line);
          if (!end.matches()) {
            throw new FrameException("line " + lineNumber + " is a malformed end line");
          }
          if (!pending.isEmpty()) {
            throw new FrameException("the base64 text ends in the middle of a group");
          }
          long declared = Long.parseLong(end.group(1));
          String hash = HexFormat.of().formatHex(sha.digest());
          if (declared != written) {
            throw new FrameException(
                "the end line declares " + declared + " bytes, the stream held " + written);
          }
          if (!hash.equals(end.group(2))) {
            throw new FrameException("the stream's SHA-256 does not match its end line");
          }
          return written;
        }
        if (!BASE64_LINE.matcher(line).matches()) {
          throw new FrameException("line " + lineNumber + " is neither base64 nor the end line");
        }
        if (padded && !line.isEmpty()) {
          throw new FrameException("line " + lineNumber + " has base64 text after its padding");
        }
        pending.append(line);
        int whole = pending.length() - pending.length() % 4;
        if (whole == 0) {
          continue;
        }
        byte[] bytes;
        try {
          bytes = Base64.getDecoder().decode(pending.substring(0, whole));
        } catch (IllegalArgumentException e) {
          throw new FrameException("line " + lineNumber + " is not valid base64");
        }
        // A group with padding ends the base64 text; more after it is malformed.
        padded = pending.charAt(whole - 1) == '=';
        pending.delete(0, whole);
        if (padded && !pending.isEmpty()) {
          throw new FrameException("line " + lineNumber + " has base64 text after its padding");
        }
        written += bytes.length;
        if (written > maxBytes) {
          throw new FrameException("the stream holds more than " + maxBytes + " bytes");
        }
        sha.update(bytes);
        out.write(bytes);
      }
    }
    if (!begun) {
      throw new FrameException(
          "the log holds no begin line (did the sidecar run, and was its pod still there to read?)");
    }
    throw new FrameException(
        "the stream ends without its end line after "
            + written
            + " bytes (cut off: the sidecar was killed, or the kubelet rotated its log)");
  }

  /** One line without its terminator, or null at the end; refuses lines over {@link #MAX_LINE}. */
  private static String readLine(Reader in) throws IOException, FrameException {
    StringBuilder line = new StringBuilder();
    int c;
    while ((c = in.read()) != -1) {
      if (c == '\n') {
        return stripCr(line);
      }
      if (line.length() >= MAX_LINE) {
        throw new FrameException("a line of the log is longer than " + MAX_LINE + " characters");
      }
      line.append((char) c);
    }
    return line.isEmpty() ? null : stripCr(line);
  }

  private static String stripCr(StringBuilder line) {
    int n = line.length();
    return n > 0 && line.charAt(n - 1) == '\r' ? line.substring(0, n - 1) : line.toString();
  }

  private static MessageDigest sha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every JDK has SHA-256", e);
    }
  }
}
