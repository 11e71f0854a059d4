package dev.agentsandbox.steprunner;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

/**
 * The real runner binary as a local process over a pipe pair, with a {@link RunnerClient} on the
 * host's end: the runner's tests need no VM. Its environment is only what the test gives it.
 */
final class LocalRunner implements AutoCloseable {
  final Path workspace;
  final RunnerClient client;
  final Process process;
  final List<String> violations = new CopyOnWriteArrayList<>();
  private final ByteArrayOutputStream stderr = new ByteArrayOutputStream();
  private final Thread reader;

  private LocalRunner(Path workspace, Process process) {
    this.workspace = workspace;
    this.process = process;
    OutputStream toRunner = process.getOutputStream();
    this.client =
        new RunnerClient(
            "the local runner",
            frame -> {
              toRunner.write(frame);
              toRunner.flush();
            },
            violations::add);
    this.reader =
        Thread.ofPlatform()
            .daemon()
            .name("local-runner")
            .start(() -> pump(process.getInputStream(), client));
    Thread.ofPlatform().daemon().start(() -> copy(process.getErrorStream(), stderr));
  }

  static LocalRunner start(Path dir, String... options) throws Exception {
    return startUnder(dir, List.of(), options);
  }

  /** The runner started by {@code prefix} (e.g. in a network namespace of its own). */
  static LocalRunner startUnder(Path dir, List<String> prefix, String... options) throws Exception {
    Path bin = Files.createDirectories(dir.resolve("bin"));
    Path workspace = Files.createDirectories(dir.resolve("workspace"));
    Path runner = RunnerBinary.extractTo(bin);
    List<String> command = new ArrayList<>(prefix);
    command.addAll(List.of(runner.toString(), "--workspace", workspace.toString()));
    command.addAll(List.of(options));
    ProcessBuilder builder = new ProcessBuilder(command);
    builder.environment().clear();
    builder.environment().put("PATH", "/usr/local/bin:/usr/bin:/bin");
    builder.environment().put("SESSION_VALUE", "from-the-session");
    LocalRunner local = new LocalRunner(workspace, builder.start());
    local.client.awaitReady(java.time.Duration.ofSeconds(10));
    return local;
  }

  private static void pump(InputStream in, RunnerClient client) {
    byte[] buffer = new byte[16384];
    try (in) {
      int n;
      while ((n = in.read(buffer)) > 0) {
        client.receive(buffer, 0, n);
      }
    } catch (IOException e) {
      // The process ended.
    } finally {
      client.ended();
    }
  }

  private static void copy(InputStream in, ByteArrayOutputStream out) {
    try (in) {
      byte[] buffer = new byte[4096];
      int n;
      while ((n = in.read(buffer)) > 0) {
        synchronized (out) {
          out.write(buffer, 0, n);
        }
      }
    } catch (IOException e) {
      // The process ended.
    }
  }

  String stderr() {
    synchronized (stderr) {
      return stderr.toString(StandardCharsets.UTF_8);
    }
  }

  /** Writes raw bytes to the runner, as a host that breaks the protocol would. */
  void writeRaw(byte[] bytes) throws IOException {
    process.getOutputStream().write(bytes);
    process.getOutputStream().flush();
  }

  @Override
  public void close() {
    client.bye();
    try {
      if (!process.waitFor(10, TimeUnit.SECONDS)) {
        process.destroyForcibly();
        process.waitFor(10, TimeUnit.SECONDS);
      }
      reader.join(5000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      process.destroyForcibly();
    }
  }
}
