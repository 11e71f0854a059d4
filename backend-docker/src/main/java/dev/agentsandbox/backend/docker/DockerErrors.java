package dev.agentsandbox.backend.docker;

import com.github.dockerjava.api.exception.DockerException;
import com.github.dockerjava.api.exception.NotFoundException;
import com.github.dockerjava.api.exception.NotModifiedException;
import dev.agentsandbox.policy.text.Bounded;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Reads the daemon's own words out of docker-java's exceptions, for messages people act on. */
final class DockerErrors {
  private static final Pattern DAEMON_MESSAGE =
      Pattern.compile("\"message\"\\s*:\\s*\"((?:[^\"\\\\]|\\\\.)*)\"");
  private static final int MAX = 300;

  private DockerErrors() {}

  /** The daemon's message (or the exception's), short enough for one log line. */
  static String describe(Throwable e) {
    String text = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
    Matcher m = DAEMON_MESSAGE.matcher(text);
    if (m.find()) {
      text = m.group(1).replace("\\\"", "\"");
    }
    if (e instanceof DockerException docker && !(text.startsWith("Status"))) {
      text = "HTTP " + docker.getHttpStatus() + ": " + text;
    }
    return Bounded.text(text, MAX, Bounded.Escape.ONE_LINE);
  }

  /** An answer of the Engine API other than success, as {@code HTTP <status>: <its message>}. */
  static String describeAnswer(int status, String body) {
    Matcher m = DAEMON_MESSAGE.matcher(body);
    String text = m.find() ? m.group(1).replace("\\\"", "\"") : body;
    return Bounded.text("HTTP " + status + ": " + text, MAX, Bounded.Escape.ONE_LINE);
  }

  /** Whether the failure only says the thing is already gone or already in the wanted state. */
  static boolean alreadyDone(RuntimeException e) {
    if (e instanceof NotFoundException || e instanceof NotModifiedException) {
      return true;
    }
    // 409 "is not running" / "removal already in progress": the wanted state, reached by others.
    return e instanceof DockerException docker
        && docker.getHttpStatus() == 409
        && (describe(e).contains("is not running") || describe(e).contains("already in progress"));
  }

  /**
   * Whether the daemon refused a network because its subnet overlaps one it already has: HTTP 403
   * with libnetwork's "Pool overlaps with other one on this address space". Any other refusal (a
   * name taken, a bad option, a daemon down) is not a reason to try another block.
   */
  static boolean subnetTaken(RuntimeException e) {
    return e instanceof DockerException docker
        && docker.getHttpStatus() == 403
        && describe(e).contains("Pool overlaps");
  }
}
