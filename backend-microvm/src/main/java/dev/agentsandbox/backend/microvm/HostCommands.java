package dev.agentsandbox.backend.microvm;

import dev.agentsandbox.backend.SandboxException;
import dev.agentsandbox.policy.text.Bounded;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * Runs the host programs this backend drives ({@code ip}, {@code nft}, {@code docker}, {@code
 * mkfs.ext4}, {@code tar}), bounded in time, and turns a failure into a message that carries the
 * command and its standard error. The process boundary's one seam.
 */
class HostCommands {
  private static final long TIMEOUT_SECONDS = 120;
  private static final int MAX_ERROR = 600;

  /** The outcome of one command. */
  record Result(int status, String stdout, String stderr) {
    boolean ok() {
      return status == 0;
    }
  }

  /** Runs {@code command}, feeding it {@code stdin} when not null, and returns what happened. */
  Result run(List<String> command, String stdin) {
    return run(command, stdin, null);
  }

  /** Runs {@code command} with its standard output going to {@code stdoutFile} when not null. */
  Result run(List<String> command, String stdin, Path stdoutFile) {
    ProcessBuilder builder = new ProcessBuilder(command);
    if (stdoutFile != null) {
      builder.redirectOutput(stdoutFile.toFile());
    }
    Process process;
    try {
      process = builder.start();
    } catch (IOException e) {
      throw new SandboxException(
          "running " + command.get(0) + ": " + e.getMessage() + " (is it installed?)", e);
    }
    CompletableFuture<String> out =
        stdoutFile == null
            ? CompletableFuture.supplyAsync(() -> drain(process.getInputStream()))
            : CompletableFuture.completedFuture("");
    CompletableFuture<String> err =
        CompletableFuture.supplyAsync(() -> drain(process.getErrorStream()));
    try {
      try (var in = process.getOutputStream()) {
        if (stdin != null) {
          in.write(stdin.getBytes(StandardCharsets.UTF_8));
        }
      }
      if (!process.waitFor(TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
        process.destroyForcibly();
        throw new SandboxException(
            "running " + String.join(" ", command) + ": no end within " + TIMEOUT_SECONDS + " s");
      }
      return new Result(process.exitValue(), out.get(), err.get());
    } catch (IOException e) {
      process.destroyForcibly();
      throw new SandboxException("running " + command.get(0) + ": " + e.getMessage(), e);
    } catch (InterruptedException e) {
      process.destroyForcibly();
      Thread.currentThread().interrupt();
      throw new SandboxException("running " + command.get(0) + ": interrupted", e);
    } catch (ExecutionException e) {
      throw new SandboxException("running " + command.get(0) + ": " + e.getCause(), e);
    }
  }

  /** Runs {@code command} and fails with its standard error unless it exits 0. */
  String check(List<String> command, String stdin) {
    Result result = run(command, stdin);
    if (!result.ok()) {
      throw new SandboxException(
          "running '"
              + String.join(" ", command)
              + "': exit status "
              + result.status()
              + ": "
              + truncate(result.stderr().strip()));
    }
    return result.stdout();
  }

  static String truncate(String text) {
    return Bounded.text(text, MAX_ERROR, Bounded.Escape.NONE);
  }

  private static String drain(InputStream stream) {
    try (stream) {
      return new String(stream.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      return "";
    }
  }
}
