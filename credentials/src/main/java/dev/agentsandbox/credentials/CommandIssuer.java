package dev.agentsandbox.credentials;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Mints a credential by running an operator's executable at launch — the hook for STS AssumeRole
 * with a session policy, Vault dynamic secrets or a cloud's workload identity.
 *
 * <p>The executable gets the control plane's environment plus the run's identity ({@code
 * AGENT_SANDBOX_RUN_ID}, {@code AGENT_SANDBOX_AGENT}, {@code AGENT_SANDBOX_DEADLINE} (RFC 3339),
 * {@code AGENT_SANDBOX_LABELS} (a JSON object), {@code AGENT_SANDBOX_CREDENTIAL}); no standard
 * input. It prints one JSON object: {@code {"value": "...", "expires_at": "2026-12-01T10:00:00Z"}}.
 * It is killed (with its children) after the time-out; an exit status other than 0, output that is
 * not that object, more than {@value #MAX_OUTPUT} bytes, or an expiry after the run's deadline
 * refuses the run. Error messages carry the command and the start of its standard error, never its
 * standard output (where the secret is). Thread-safe.
 */
public final class CommandIssuer {
  /** The most bytes read from the command's standard output, and of its standard error. */
  public static final int MAX_OUTPUT = 64 * 1024;

  private static final ObjectMapper JSON = new ObjectMapper();
  private final List<String> command;
  private final Duration timeout;
  private final Clock clock;

  /**
   * @param command the executable (an absolute path) and its arguments
   */
  public CommandIssuer(List<String> command, Duration timeout, Clock clock) {
    if (command.isEmpty() || !Path.of(command.get(0)).isAbsolute()) {
      throw new IllegalArgumentException("a credential command needs an absolute executable path");
    }
    this.command = List.copyOf(command);
    this.timeout = timeout;
    this.clock = clock;
  }

  /** Runs the command for {@code run} and checks what it printed. */
  public IssuedCredential issue(String name, RunIdentity run) {
    String what = "mint credential " + name + " for run " + run.runId() + " with " + command.get(0);
    if (!Files.isExecutable(Path.of(command.get(0)))) {
      throw new UnableToIssueCredentialException(what + ": not an executable file");
    }
    ProcessBuilder pb = new ProcessBuilder(command);
    Map<String, String> env = pb.environment();
    env.put("AGENT_SANDBOX_RUN_ID", run.runId());
    env.put("AGENT_SANDBOX_AGENT", run.agent());
    env.put("AGENT_SANDBOX_DEADLINE", run.deadline().toString());
    env.put("AGENT_SANDBOX_CREDENTIAL", name);
    try {
      env.put("AGENT_SANDBOX_LABELS", JSON.writeValueAsString(run.labels()));
    } catch (IOException e) {
      throw new UnableToIssueCredentialException(what + ": " + e.getMessage(), e);
    }
    pb.redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
    Process process;
    try {
      process = pb.start();
    } catch (IOException e) {
      throw new UnableToIssueCredentialException(
          what + ": could not start it: " + e.getMessage(), e);
    }
    try {
      CompletableFuture<byte[]> out = readBounded(process.getInputStream());
      CompletableFuture<byte[]> err = readBounded(process.getErrorStream());
      if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
        kill(process);
        throw new UnableToIssueCredentialException(
            what + ": no answer within " + timeout.toSeconds() + " s (killed)");
      }
      byte[] stdout = out.get(5, TimeUnit.SECONDS);
      String stderr = shortened(err.get(5, TimeUnit.SECONDS));
      if (process.exitValue() != 0) {
        throw new UnableToIssueCredentialException(
            what
                + ": exit status "
                + process.exitValue()
                + (stderr.isEmpty() ? "" : ": " + stderr));
      }
      return parse(what, name, stdout, run.deadline());
    } catch (InterruptedException e) {
      kill(process);
      Thread.currentThread().interrupt();
      throw new UnableToIssueCredentialException(what + ": interrupted", e);
    } catch (ExecutionException | TimeoutException e) {
      kill(process);
      throw new UnableToIssueCredentialException(what + ": could not read its output", e);
    }
  }

  private IssuedCredential parse(String what, String name, byte[] stdout, Instant deadline) {
    if (stdout.length > MAX_OUTPUT) {
      throw new UnableToIssueCredentialException(
          what + ": printed more than " + MAX_OUTPUT + " bytes (expected one JSON object)");
    }
    JsonNode doc;
    try {
      doc = JSON.readTree(stdout);
    } catch (IOException e) {
      throw new UnableToIssueCredentialException(
          what + ": its output is not JSON (expected {\"value\": ..., \"expires_at\": ...})");
    }
    if (doc == null || !doc.isObject()) {
      throw new UnableToIssueCredentialException(
          what
              + ": its output is not a JSON object (expected {\"value\": ..., \"expires_at\": ...})");
    }
    JsonNode value = doc.get("value");
    JsonNode expires = doc.get("expires_at");
    if (value == null || !value.isTextual() || value.asText().isEmpty()) {
      throw new UnableToIssueCredentialException(
          what + ": no non-empty string \"value\" in its output");
    }
    if (value.asText().indexOf('\0') >= 0) {
      throw new UnableToIssueCredentialException(what + ": \"value\" contains a NUL character");
    }
    if (expires == null || !expires.isTextual()) {
      throw new UnableToIssueCredentialException(
          what + ": no \"expires_at\" in its output (a credential without an expiry is refused)");
    }
    Instant expiresAt;
    try {
      expiresAt = Instant.parse(expires.asText());
    } catch (DateTimeParseException e) {
      throw new UnableToIssueCredentialException(
          what + ": \"expires_at\" is not an RFC 3339 UTC time like 2026-12-01T10:00:00Z");
    }
    if (expiresAt.isAfter(deadline)) {
      throw new UnableToIssueCredentialException(
          what
              + ": it expires at "
              + expiresAt
              + ", after the run's deadline "
              + deadline
              + " (credentials must die with the run)");
    }
    if (!expiresAt.isAfter(clock.instant())) {
      throw new UnableToIssueCredentialException(
          what + ": it has already expired (" + expiresAt + ")");
    }
    return new IssuedCredential(name, "command", value.asText(), expiresAt);
  }

  private static CompletableFuture<byte[]> readBounded(InputStream in) {
    return CompletableFuture.supplyAsync(
        () -> {
          try (in) {
            byte[] head = in.readNBytes(MAX_OUTPUT + 1);
            in.transferTo(java.io.OutputStream.nullOutputStream()); // never block the writer
            return head;
          } catch (IOException e) {
            return new byte[0];
          }
        },
        Thread::startVirtualThread);
  }

  private static void kill(Process process) {
    List<ProcessHandle> tree = new ArrayList<>();
    process.descendants().forEach(tree::add);
    tree.forEach(ProcessHandle::destroyForcibly);
    process.destroyForcibly();
  }

  private static String shortened(byte[] stderr) {
    String s = new String(stderr, StandardCharsets.UTF_8).strip().replaceAll("\\p{Cntrl}", " ");
    return s.length() > 300 ? s.substring(0, 297) + "..." : s;
  }
}
