package dev.agentsandbox.backend.docker;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.async.ResultCallback;
import com.github.dockerjava.api.model.Frame;
import com.github.dockerjava.api.model.StreamType;
import dev.agentsandbox.steprunner.RunnerClient;
import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.List;
import java.util.function.Consumer;

/**
 * The one channel to a session's step runner: a long-lived exec of {@link SessionRunner#command()}
 * in the workload container ({@code POST /containers/{id}/exec}, then {@code /exec/{id}/start}
 * hijacked), as the workload's user with the run's environment. The host's frames go to the exec's
 * standard input through a bounded queue ({@link Stdin}); its standard output is the runner's
 * frames, handed to the {@link RunnerClient} as they arrive; its standard error (the runner's own
 * complaints, never a step's output, which is framed) is kept, its last 2 KiB, for the message when
 * the stream ends. Only the holder of the Docker socket can open such a channel: nothing inside any
 * sandbox can reach it. Thread-safe.
 */
final class RunnerChannel implements AutoCloseable {
  /** The most frame bytes queued for the runner before a writer waits. */
  static final int STDIN_QUEUE_BYTES = 1 << 20;

  private static final int STDERR_KEPT = 2048;

  private final Stdin stdin = new Stdin();
  private final Attached attached;
  private final RunnerClient client;

  private RunnerChannel(String runId, Consumer<String> onViolation, Consumer<String> onEnd) {
    this.client = new RunnerClient("run " + runId, stdin::offer, onViolation);
    this.attached = new Attached(client, onEnd);
  }

  /**
   * Starts the runner in {@code containerId} and returns at once; {@link RunnerClient#awaitReady}
   * waits for its greeting.
   *
   * @param onViolation told why the runner can no longer be trusted
   * @param onEnd told, once, when the stream ended (the runner exited, the container stopped), with
   *     the runner's last words on its standard error
   * @throws RuntimeException the daemon's refusal, as docker-java gives it
   */
  static RunnerChannel start(
      DockerClient docker,
      String containerId,
      List<String> env,
      String user,
      String runId,
      Consumer<String> onViolation,
      Consumer<String> onEnd) {
    RunnerChannel channel = new RunnerChannel(runId, onViolation, onEnd);
    String execId =
        docker
            .execCreateCmd(containerId)
            .withCmd(SessionRunner.command().toArray(String[]::new))
            .withEnv(env)
            .withUser(user)
            .withAttachStdin(true)
            .withAttachStdout(true)
            .withAttachStderr(true)
            .withTty(false)
            .exec()
            .getId();
    docker
        .execStartCmd(execId)
        .withDetach(false)
        .withTty(false)
        .withStdIn(channel.stdin)
        .exec(channel.attached);
    return channel;
  }

  RunnerClient client() {
    return client;
  }

  /**
   * Ends the channel: the runner's standard input ends (it kills its steps and exits), and the
   * attached stream is closed.
   */
  @Override
  public void close() {
    stdin.close();
    // Ended here, not only when the daemon ends the stream: an exec's stream can outlive its
    // container (runsc's did when its sandbox died), and every open operation must fail now.
    attached.end("the host closed it");
    SandboxObjects.close(attached, "the step runner", "its attached stream");
  }

  /** The runner's output: frames to the client, its own errors kept for the end. */
  private static final class Attached extends ResultCallback.Adapter<Frame> {
    private final RunnerClient client;
    private final Consumer<String> onEnd;
    private final StringBuilder stderr = new StringBuilder();
    private boolean ended;

    Attached(RunnerClient client, Consumer<String> onEnd) {
      this.client = client;
      this.onEnd = onEnd;
    }

    @Override
    public void onNext(Frame frame) {
      byte[] payload = frame.getPayload();
      if (frame.getStreamType() == StreamType.STDOUT || frame.getStreamType() == StreamType.RAW) {
        client.receive(payload, 0, payload.length);
        return;
      }
      synchronized (stderr) {
        stderr.append(new String(payload, StandardCharsets.UTF_8));
        if (stderr.length() > STDERR_KEPT) {
          stderr.delete(0, stderr.length() - STDERR_KEPT);
        }
      }
    }

    @Override
    public void onComplete() {
      end("its stream ended");
      super.onComplete();
    }

    @Override
    public void onError(Throwable throwable) {
      end("its stream failed: " + DockerErrors.describe(throwable));
      super.onError(throwable);
    }

    private void end(String how) {
      String said;
      synchronized (stderr) {
        if (ended) {
          return;
        }
        ended = true;
        said = stderr.toString().strip().replaceAll("\\p{Cntrl}", " ");
      }
      client.ended();
      onEnd.accept(how + (said.isEmpty() ? "" : "; it said: " + said));
    }
  }

  /**
   * The exec's standard input as docker-java reads it (from its own thread, until end of stream):
   * frames queued by writers, at most {@link #STDIN_QUEUE_BYTES} at once, so a large put waits for
   * the runner instead of filling the host's memory. Ends when closed.
   */
  private static final class Stdin extends InputStream {
    private final ArrayDeque<byte[]> frames = new ArrayDeque<>();
    private long queued;
    private byte[] current;
    private int at;
    private boolean closed;

    synchronized void offer(byte[] frame) throws IOException {
      try {
        while (!closed && queued > 0 && queued + frame.length > STDIN_QUEUE_BYTES) {
          wait();
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new InterruptedIOException("writing to the step runner: interrupted");
      }
      if (closed) {
        throw new IOException("the step runner's channel is closed");
      }
      frames.add(frame);
      queued += frame.length;
      notifyAll();
    }

    @Override
    public synchronized int read() throws IOException {
      byte[] one = new byte[1];
      return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
    }

    @Override
    public synchronized int read(byte[] buffer, int offset, int length) throws IOException {
      if (length == 0) {
        return 0;
      }
      try {
        while (current == null && frames.isEmpty() && !closed) {
          wait();
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new InterruptedIOException("reading frames for the step runner: interrupted");
      }
      if (current == null) {
        if (frames.isEmpty()) {
          return -1;
        }
        current = frames.poll();
        at = 0;
      }
      int n = Math.min(length, current.length - at);
      System.arraycopy(current, at, buffer, offset, n);
      at += n;
      if (at == current.length) {
        queued -= current.length;
        current = null;
        notifyAll();
      }
      return n;
    }

    @Override
    public synchronized void close() {
      closed = true;
      frames.clear();
      current = null;
      queued = 0;
      notifyAll();
    }
  }
}
