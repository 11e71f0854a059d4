package dev.agentsandbox.backend.docker;

import com.github.dockerjava.api.async.ResultCallback;
import com.github.dockerjava.api.model.Frame;
import com.github.dockerjava.api.model.StreamType;
import dev.agentsandbox.backend.SandboxListener;
import dev.agentsandbox.policy.config.ProxyLines;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * Follows the proxy container's output: each standard-output line is one egress decision for the
 * listener; standard error is watched for the ready line and kept (its last lines) for messages
 * when the proxy fails to start.
 */
final class ProxyOutput extends ResultCallback.Adapter<Frame> {
  private static final int KEPT_ERROR_LINES = 8;
  private static final int MAX_LINE = 64 * 1024;

  private final SandboxListener listener;
  private final ByteArrayOutputStream stdout = new ByteArrayOutputStream();
  private final ByteArrayOutputStream stderr = new ByteArrayOutputStream();
  private final Deque<String> lastErrors = new ArrayDeque<>();
  private final CountDownLatch ready = new CountDownLatch(1);
  private final CountDownLatch awaiting = new CountDownLatch(1);
  // Our own: docker-java's awaitCompletion(timeout) closes the stream when it returns, so it cannot
  // be used to ask "has the output ended yet?".
  private final CountDownLatch ended = new CountDownLatch(1);
  private volatile String caPem;

  ProxyOutput(SandboxListener listener) {
    this.listener = listener;
  }

  @Override
  public void onNext(Frame frame) {
    boolean isOut =
        frame.getStreamType() == StreamType.STDOUT || frame.getStreamType() == StreamType.RAW;
    ByteArrayOutputStream buffer = isOut ? stdout : stderr;
    for (byte b : frame.getPayload()) {
      if (b == '\n' || buffer.size() >= MAX_LINE) {
        line(isOut, buffer.toString(StandardCharsets.UTF_8));
        buffer.reset();
      } else {
        buffer.write(b);
      }
    }
  }

  private void line(boolean isOut, String line) {
    if (line.isBlank()) {
      return;
    }
    if (isOut) {
      listener.onEgressDecision(line.strip());
      return;
    }
    if (line.startsWith(dev.agentsandbox.policy.config.ProxyPolicy.CA_LINE)) {
      // The run CA's certificate (public), announced once before the ready line.
      dev.agentsandbox.policy.config.ProxyPolicy.caCertificate(line).ifPresent(pem -> caPem = pem);
      return;
    }
    if (line.contains(ProxyLines.READY)) {
      ready.countDown();
    }
    if (line.contains(ProxyLines.AWAITING_POLICY)) {
      awaiting.countDown();
    }
    synchronized (lastErrors) {
      lastErrors.addLast(line.strip());
      while (lastErrors.size() > KEPT_ERROR_LINES) {
        lastErrors.removeFirst();
      }
    }
  }

  @Override
  public void onComplete() {
    flush();
    ended.countDown();
    super.onComplete();
  }

  @Override
  public void onError(Throwable throwable) {
    flush();
    synchronized (lastErrors) {
      lastErrors.addLast("(following its output failed: " + DockerErrors.describe(throwable) + ")");
    }
    ended.countDown();
    super.onError(throwable);
  }

  private void flush() {
    if (stdout.size() > 0) {
      line(true, stdout.toString(StandardCharsets.UTF_8));
      stdout.reset();
    }
    if (stderr.size() > 0) {
      line(false, stderr.toString(StandardCharsets.UTF_8));
      stderr.reset();
    }
  }

  /** Waits for the ready line; false when the time ran out or the proxy's output ended first. */
  boolean awaitReady(long millis) throws InterruptedException {
    return awaitLine(ready, millis);
  }

  /**
   * Waits for the line of a proxy started awaiting its policy; false when the time ran out or the
   * proxy's output ended first.
   */
  boolean awaitAwaiting(long millis) throws InterruptedException {
    return awaitLine(awaiting, millis);
  }

  /** The run CA's certificate (PEM) the proxy announced, if its policy inspects hosts. */
  java.util.Optional<String> caCertificate() {
    return java.util.Optional.ofNullable(caPem);
  }

  /** Whether the proxy has printed its ready line, i.e. it applied a policy. */
  boolean isReady() {
    return ready.getCount() == 0;
  }

  /** Whether the proxy's output ended (it stopped, or following it broke). */
  boolean hasEnded() {
    return ended.getCount() == 0;
  }

  private boolean awaitLine(CountDownLatch line, long millis) throws InterruptedException {
    long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
    while (System.nanoTime() < until) {
      if (line.await(100, TimeUnit.MILLISECONDS)) {
        return true;
      }
      if (ended.getCount() == 0) {
        return line.getCount() == 0;
      }
    }
    return false;
  }

  /** The proxy's last lines of standard error, for a message when it did not start. */
  String lastErrors() {
    synchronized (lastErrors) {
      return lastErrors.isEmpty() ? "(no output)" : String.join(" | ", lastErrors);
    }
  }
}
