package dev.agentsandbox.credentials;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.agentsandbox.policy.run.Redactor;
import dev.agentsandbox.policy.text.Bounded;
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
import java.util.regex.Pattern;

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
 * standard output (where the secret is), and the standard error is redacted first ({@link
 * #redactedStderr}): a message becomes the run's refusal, its API answer and a permanent audit row,
 * and a helper that fails loudly ({@code vault: VAULT_TOKEN=hvs.... denied}) must not write a
 * secret there. Thread-safe.
 */
public final class CommandIssuer {
  /** The most bytes read from the command's standard output, and of its standard error. */
  public static final int MAX_OUTPUT = 64 * 1024;

  /** How much of the command's standard error a message keeps, after redaction. */
  static final int STDERR_KEPT = 300;

  /**
   * Environment variables whose values are secrets by their names ({@code VAULT_TOKEN}, {@code
   * AWS_SECRET_ACCESS_KEY}, {@code DB_PASSWORD}, {@code GITHUB_PAT}, {@code DATABASE_URL}...): the
   * control plane's own credentials, which the command inherits and may print.
   */
  static final Pattern SECRET_NAME =
      Pattern.compile(
          "(?i)(token|secret|passw|key|credential|auth|session|cookie|private|dsn|database_url)"
              + "|(^|_)pat($|_)");

  private static final ObjectMapper JSON = new ObjectMapper();
  private final List<String> command;
  private final Duration timeout;
  private final Clock clock;
  private final Map<String, String> environment;

  /**
   * @param command the executable (an absolute path) and its arguments
   */
  public CommandIssuer(List<String> command, Duration timeout, Clock clock) {
    this(command, timeout, clock, Map.of());
  }

  /**
   * Seam for tests: {@code environment} is added to the one the command inherits, as the control
   * plane's own would be.
   */
  CommandIssuer(
      List<String> command, Duration timeout, Clock clock, Map<String, String> environment) {
    if (command.isEmpty() || !Path.of(command.get(0)).isAbsolute()) {
      throw new IllegalArgumentException("a credential command needs an absolute executable path");
    }
    this.command = List.copyOf(command);
    this.timeout = timeout;
    this.clock = clock;
    this.environment = Map.copyOf(environment);
  }

  /** Runs the command for {@code run} and checks what it printed. */
  public IssuedCredential issue(String name, RunIdentity run) {
    String what = "mint credential " + name + " for run " + run.runId() + " with " + command.get(0);
    if (!Files.isExecutable(Path.of(command.get(0)))) {
      throw new UnableToIssueCredentialException(what + ": not an executable file");
    }
    ProcessBuilder pb = new ProcessBuilder(command);
    Map<String, String> env = pb.environment();
    env.putAll(environment);
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
      String stderr = redactedStderr(err.get(5, TimeUnit.SECONDS), stdout, env);
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

  /**
   * The start of the command's standard error as a message may carry it: with the secrets it could
   * hold removed before it is cut (so a secret straddling the cut is still found whole) — the value
   * it printed on standard output if it printed one (a command that minted, then failed), the
   * values of the environment variables it was given whose names say secret ({@link #SECRET_NAME}),
   * and every shape {@link Redactor} knows ({@code NAME=value} with a secret-sounding name, bearer
   * headers, JWTs, AWS keys, Vault tokens...); then made one line (whitespace runs one space, other
   * control characters {@code ?}: {@link Bounded.Escape#ONE_LINE}), and at most {@value
   * #STDERR_KEPT} characters kept.
   */
  static String redactedStderr(byte[] stderr, byte[] stdout, Map<String, String> env) {
    List<String> secrets = new ArrayList<>();
    String printed = new String(stdout, StandardCharsets.UTF_8).strip();
    if (!printed.isEmpty()) {
      secrets.add(printed);
      try {
        JsonNode value = JSON.readTree(stdout).path("value");
        if (value.isTextual()) {
          secrets.add(value.asText());
        }
      } catch (IOException e) {
        // not JSON: the whole of what it printed is redacted, as above
      }
    }
    env.forEach(
        (name, value) -> {
          if (!name.startsWith("AGENT_SANDBOX_") && SECRET_NAME.matcher(name).find()) {
            secrets.add(value);
          }
        });
    String redacted =
        new Redactor(secrets).redact(new String(stderr, StandardCharsets.UTF_8)).strip();
    return Bounded.within(redacted, STDERR_KEPT, Bounded.Escape.ONE_LINE);
  }
}
