package dev.agentsandbox.credentials;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Revokes a credential a {@link CommandIssuer} minted, by running the operator's revoke executable
 * for it (a Vault lease revocation, an STS session's deny policy): when the workload stops, and
 * when a run is refused after the credential was minted.
 *
 * <p>The executable gets the control plane's environment plus {@code AGENT_SANDBOX_RUN_ID}, {@code
 * AGENT_SANDBOX_AGENT}, {@code AGENT_SANDBOX_CREDENTIAL} and {@code AGENT_SANDBOX_EXPIRES_AT}, and
 * the credential's value on its standard input (never in its arguments or environment, which other
 * users of the host can read). Exit status 0 means revoked. Whatever it prints is read and
 * discarded, never kept or logged: it may echo the secret. It is killed (with its children) after
 * the time-out. Thread-safe.
 */
public final class CommandRevoker {
  private final List<String> command;
  private final Duration timeout;

  /**
   * @param command the executable (an absolute path) and its arguments
   */
  public CommandRevoker(List<String> command, Duration timeout) {
    if (command.isEmpty() || !Path.of(command.get(0)).isAbsolute()) {
      throw new IllegalArgumentException("a revoke command needs an absolute executable path");
    }
    if (timeout.isNegative() || timeout.isZero()) {
      throw new IllegalArgumentException("a revoke command's time-out must be positive");
    }
    this.command = List.copyOf(command);
    this.timeout = timeout;
  }

  /**
   * Revokes {@code credential} of {@code run}.
   *
   * @throws UnableToRevokeCredentialException naming the credential and what failed
   */
  public void revoke(IssuedCredential credential, RunIdentity run) {
    String what =
        "revoke credential "
            + credential.name()
            + " of run "
            + run.runId()
            + " with "
            + command.get(0);
    if (!Files.isExecutable(Path.of(command.get(0)))) {
      throw new UnableToRevokeCredentialException(what + ": not an executable file");
    }
    ProcessBuilder pb = new ProcessBuilder(command);
    Map<String, String> env = pb.environment();
    env.put("AGENT_SANDBOX_RUN_ID", run.runId());
    env.put("AGENT_SANDBOX_AGENT", run.agent());
    env.put("AGENT_SANDBOX_CREDENTIAL", credential.name());
    env.put("AGENT_SANDBOX_EXPIRES_AT", credential.expiresAt().toString());
    pb.redirectErrorStream(true);
    Process process;
    try {
      process = pb.start();
    } catch (IOException e) {
      throw new UnableToRevokeCredentialException(
          what + ": could not start it: " + e.getMessage(), e);
    }
    Thread.startVirtualThread(() -> discard(process.getInputStream()));
    try (OutputStream in = process.getOutputStream()) {
      in.write(credential.value().getBytes(StandardCharsets.UTF_8));
    } catch (IOException e) {
      // It may exit without reading its input; its exit status decides.
    }
    try {
      if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
        kill(process);
        throw new UnableToRevokeCredentialException(
            what + ": no answer within " + timeout.toSeconds() + " s (killed)");
      }
    } catch (InterruptedException e) {
      kill(process);
      Thread.currentThread().interrupt();
      throw new UnableToRevokeCredentialException(what + ": interrupted", e);
    }
    if (process.exitValue() != 0) {
      throw new UnableToRevokeCredentialException(
          what + ": exit status " + process.exitValue() + " (its output is not kept)");
    }
  }

  private static void discard(InputStream out) {
    try (out) {
      out.transferTo(OutputStream.nullOutputStream());
    } catch (IOException e) {
      // The process is gone; nothing of its output is wanted.
    }
  }

  private static void kill(Process process) {
    List<ProcessHandle> tree = new ArrayList<>();
    process.descendants().forEach(tree::add);
    tree.forEach(ProcessHandle::destroyForcibly);
    process.destroyForcibly();
  }
}
