package dev.agentsandbox.backend.microvm;

import dev.agentsandbox.backend.SandboxException;
import dev.agentsandbox.backend.SandboxListener;
import dev.agentsandbox.policy.config.ProxyLines;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * The run's egress proxy as a host process under its slot's uid: each standard-output line is one
 * decision for the listener; standard error is watched for the ready line and its last lines kept
 * for messages. Thread-safe.
 */
final class ProxyProcess {
  private static final int KEPT_ERROR_LINES = 8;

  private final Process process;
  private final Deque<String> lastErrors = new ArrayDeque<>();
  private final CountDownLatch ready = new CountDownLatch(1);
  private volatile String caPem;
  private final Thread stdout;
  private final Thread stderr;

  private ProxyProcess(Process process, SandboxListener listener, String runId) {
    this.process = process;
    this.stdout =
        Thread.ofPlatform()
            .daemon()
            .name("asb-proxy-out-" + runId)
            .start(() -> lines(process.getInputStream(), listener::onEgressDecision));
    this.stderr =
        Thread.ofPlatform()
            .daemon()
            .name("asb-proxy-err-" + runId)
            .start(() -> lines(process.getErrorStream(), this::errorLine));
  }

  static ProxyProcess start(List<String> command, SandboxListener listener, String runId) {
    try {
      Process process =
          HostChildren.start(
              new ProcessBuilder(command).redirectInput(ProcessBuilder.Redirect.PIPE));
      process.getOutputStream().close();
      return new ProxyProcess(process, listener, runId);
    } catch (IOException e) {
      throw new SandboxException("starting the proxy: " + e.getMessage(), e);
    }
  }

  private static void lines(InputStream stream, java.util.function.Consumer<String> sink) {
    try (BufferedReader reader =
        new BufferedReader(new InputStreamReader(stream, StandardCharsets.UTF_8))) {
      String line;
      while ((line = reader.readLine()) != null) {
        if (!line.isBlank()) {
          sink.accept(line.strip());
        }
      }
    } catch (IOException e) {
      // The proxy ended; its exit is reported by whoever waits for it.
    }
  }

  private void errorLine(String line) {
    if (line.startsWith(dev.agentsandbox.policy.config.ProxyPolicy.CA_LINE)) {
      // The run CA's certificate (public), announced once before the ready line; not kept among
      // the lines a message quotes.
      dev.agentsandbox.policy.config.ProxyPolicy.caCertificate(line).ifPresent(pem -> caPem = pem);
      return;
    }
    if (line.contains(ProxyLines.READY)) {
      ready.countDown();
    }
    synchronized (lastErrors) {
      lastErrors.addLast(line);
      while (lastErrors.size() > KEPT_ERROR_LINES) {
        lastErrors.removeFirst();
      }
    }
  }

  /** Waits for the ready line; false when the time ran out or the proxy ended first. */
  boolean awaitReady(long millis) throws InterruptedException {
    long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
    while (System.nanoTime() < until) {
      if (ready.await(100, TimeUnit.MILLISECONDS)) {
        return true;
      }
      if (!process.isAlive()) {
        return ready.getCount() == 0;
      }
    }
    return false;
  }

  /** The run CA's certificate (PEM) the proxy announced, if its policy inspects hosts. */
  java.util.Optional<String> caCertificate() {
    return java.util.Optional.ofNullable(caPem);
  }

  String lastErrors() {
    synchronized (lastErrors) {
      return lastErrors.isEmpty() ? "(no output)" : String.join(" | ", lastErrors);
    }
  }

  long pid() {
    return process.pid();
  }

  /** Stops the proxy (SIGTERM, then SIGKILL) and waits for its last decisions to be read. */
  void stop() throws InterruptedException {
    if (process.isAlive()) {
      process.destroy();
      if (!process.waitFor(10, TimeUnit.SECONDS)) {
        process.destroyForcibly();
        process.waitFor(10, TimeUnit.SECONDS);
      }
    }
    stdout.join(10_000);
    stderr.join(1_000);
  }
}
