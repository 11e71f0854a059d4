package dev.agentsandbox.runs.local;

import dev.agentsandbox.backend.session.Step;
import dev.agentsandbox.backend.session.StepEnd;
import dev.agentsandbox.backend.session.StepListener;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.TimeUnit;

/**
 * One step of a {@link LocalSessionSandbox}: a local process, its stdin written and closed, each of
 * its streams pumped to the listener on a thread of its own (so one stream never holds up the
 * other), and a kill that stops the process and every process it started.
 */
final class LocalStep implements Step {
  private final int number;
  private final Process process;
  private final Thread out;
  private final Thread err;
  private volatile boolean killed;

  LocalStep(int number, Process process, byte[] stdin, StepListener listener) {
    this.number = number;
    this.process = process;
    Thread.ofVirtual()
        .start(
            () -> {
              try (OutputStream in = process.getOutputStream()) {
                in.write(stdin);
              } catch (IOException e) {
                // The command stopped reading; what it read is what it got.
              }
            });
    this.out = pump(process.getInputStream(), listener::onOutput);
    this.err = pump(process.getErrorStream(), listener::onErrorOutput);
  }

  private static Thread pump(InputStream stream, java.util.function.Consumer<byte[]> sink) {
    return Thread.ofVirtual()
        .start(
            () -> {
              byte[] buffer = new byte[8192];
              try (stream) {
                int n;
                while ((n = stream.read(buffer)) >= 0) {
                  if (n > 0) {
                    sink.accept(Arrays.copyOf(buffer, n));
                  }
                }
              } catch (IOException e) {
                // The process went; its stream ends here.
              }
            });
  }

  @Override
  public int number() {
    return number;
  }

  @Override
  public Optional<StepEnd> awaitEnd(Instant until) throws InterruptedException {
    long left = Math.max(0, Duration.between(Instant.now(), until).toMillis());
    if (!process.waitFor(left, TimeUnit.MILLISECONDS)) {
      return Optional.empty();
    }
    // Every chunk reaches the listener before the end is told; a background child that holds a
    // stream open is given a bounded while, then the stream is left to it.
    out.join(Duration.ofSeconds(5));
    err.join(Duration.ofSeconds(5));
    int status = process.exitValue();
    if (killed) {
      return Optional.of(new StepEnd(StepEnd.End.KILLED, OptionalInt.of(status), "killed"));
    }
    return Optional.of(new StepEnd(StepEnd.End.EXIT, OptionalInt.of(status), "exited"));
  }

  @Override
  public void kill() {
    if (!process.isAlive()) {
      return;
    }
    killed = true;
    process.descendants().forEach(ProcessHandle::destroyForcibly);
    process.destroyForcibly();
  }
}
