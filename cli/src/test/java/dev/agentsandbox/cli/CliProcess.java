package dev.agentsandbox.cli;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/**
 * The packaged {@code agent-sandbox} jar run as a process, its stdout and stderr read line by line
 * as they arrive, each line with the instant it was read.
 */
public final class CliProcess implements AutoCloseable {
  /** A line as read, with when. */
  public record Line(Instant at, String text) {}

  public static final Path JAR = Path.of("target", "agent-sandbox.jar");

  private final Process process;
  private final List<Line> out = new ArrayList<>();
  private final List<Line> err = new ArrayList<>();

  private CliProcess(Process process) {
    this.process = process;
    Thread.ofVirtual().start(() -> read(process.getInputStream(), out));
    Thread.ofVirtual().start(() -> read(process.getErrorStream(), err));
  }

  private static final java.util.regex.Pattern LISTENING =
      java.util.regex.Pattern.compile("listening on (http://\\S+)");

  /**
   * Reads a {@code serve} process's output until it says where it listens (within 120 s) and
   * returns that base URL; the rest of its output is drained in the background so its pipe never
   * fills.
   */
  public static String awaitListening(Process serve) throws IOException {
    BufferedReader out =
        new BufferedReader(new InputStreamReader(serve.getInputStream(), StandardCharsets.UTF_8));
    Instant until = Instant.now().plusSeconds(120);
    String line;
    while (Instant.now().isBefore(until) && (line = out.readLine()) != null) {
      java.util.regex.Matcher m = LISTENING.matcher(line);
      if (m.find()) {
        Thread.ofVirtual()
            .start(
                () -> {
                  try {
                    while (out.readLine() != null) {
                      // The server's log is not under test.
                    }
                  } catch (IOException e) {
                    // The process ended.
                  }
                });
        return m.group(1);
      }
    }
    throw new AssertionError("serve did not say where it listens within 120 s");
  }

  public static CliProcess start(Map<String, String> env, String... args) throws IOException {
    return startIn(null, env, args);
  }

  /** Like {@link #start}, in working directory {@code directory} (null: this process's own). */
  public static CliProcess startIn(Path directory, Map<String, String> env, String... args)
      throws IOException {
    List<String> command = new ArrayList<>();
    // As a shell starts a foreground command: SIGINT at its default. A build started in the
    // background by a shell without job control (nohup ... &, some CI runners) passes SIGINT on
    // ignored, and the JVM then cannot take Ctrl-C at all (CliRunIT's Ctrl-C test failed so).
    command.addAll(List.of("env", "--default-signal=INT"));
    command.add(ProcessHandle.current().info().command().orElse("java"));
    command.add("--enable-native-access=ALL-UNNAMED");
    command.add("-jar");
    command.add(JAR.toAbsolutePath().toString());
    command.addAll(List.of(args));
    ProcessBuilder builder = new ProcessBuilder(command);
    if (directory != null) {
      builder.directory(directory.toFile());
    }
    builder.environment().remove("AGENT_SANDBOX_TOKEN");
    builder.environment().remove("AGENT_SANDBOX_URL");
    builder.environment().putAll(env);
    return new CliProcess(builder.start());
  }

  /** Runs to the end with {@code stdin} as standard input; bounded by {@code timeout}. */
  public static CliProcess run(
      Map<String, String> env, String stdin, Duration timeout, String... args)
      throws IOException, InterruptedException {
    CliProcess cli = start(env, args);
    try (OutputStream in = cli.process.getOutputStream()) {
      in.write(stdin.getBytes(StandardCharsets.UTF_8));
    }
    cli.await(timeout);
    return cli;
  }

  private void read(InputStream stream, List<Line> into) {
    try (BufferedReader reader =
        new BufferedReader(new InputStreamReader(stream, StandardCharsets.UTF_8))) {
      String line;
      while ((line = reader.readLine()) != null) {
        synchronized (this) {
          into.add(new Line(Instant.now(), line));
          notifyAll();
        }
      }
    } catch (IOException e) {
      // The process ended.
    }
  }

  public long pid() {
    return process.pid();
  }

  /** Waits for the process to end; kills it and fails past {@code timeout}. */
  public int await(Duration timeout) throws InterruptedException {
    if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
      process.destroyForcibly();
      throw new AssertionError("the CLI did not end within " + timeout + "; " + this);
    }
    // Let the readers take the last lines.
    Thread.sleep(100);
    return process.exitValue();
  }

  /** Waits for a stdout or stderr line matching {@code wanted}; fails past {@code timeout}. */
  synchronized Line awaitLine(boolean stderr, Predicate<String> wanted, Duration timeout)
      throws InterruptedException {
    Instant until = Instant.now().plus(timeout);
    while (true) {
      for (Line line : stderr ? err : out) {
        if (wanted.test(line.text())) {
          return line;
        }
      }
      long left = Duration.between(Instant.now(), until).toMillis();
      if (left <= 0) {
        throw new AssertionError("no such line within " + timeout + "; " + this);
      }
      wait(Math.min(left, 500));
    }
  }

  public synchronized List<Line> out() {
    return List.copyOf(out);
  }

  public synchronized List<Line> err() {
    return List.copyOf(err);
  }

  public synchronized String outText() {
    return String.join("\n", out.stream().map(Line::text).toList());
  }

  public synchronized String errText() {
    return String.join("\n", err.stream().map(Line::text).toList());
  }

  @Override
  public synchronized String toString() {
    String state = process.isAlive() ? "running" : "exited " + process.exitValue();
    return state + "; stdout:\n" + outText() + "\nstderr:\n" + errText();
  }

  @Override
  public void close() {
    if (process.isAlive()) {
      process.destroyForcibly();
    }
  }
}
