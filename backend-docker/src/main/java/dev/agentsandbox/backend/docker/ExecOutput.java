package dev.agentsandbox.backend.docker;

import com.github.dockerjava.api.async.ResultCallback;
import com.github.dockerjava.api.model.Frame;
import dev.agentsandbox.backend.SandboxListener;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * Follows the output of a command started in a running container ({@code docker exec}): every chunk
 * to the listener, and a latch of its own for "has the stream ended yet?" (docker-java's {@code
 * awaitCompletion(timeout)} closes the stream when it returns).
 */
final class ExecOutput extends ResultCallback.Adapter<Frame> {
  private final CountDownLatch ended = new CountDownLatch(1);
  private final WorkloadOutput frames;

  ExecOutput(SandboxListener listener) {
    this.frames = new WorkloadOutput(listener);
  }

  @Override
  public void onNext(Frame frame) {
    frames.onNext(frame);
  }

  @Override
  public void onComplete() {
    ended.countDown();
    super.onComplete();
  }

  @Override
  public void onError(Throwable throwable) {
    ended.countDown();
    super.onError(throwable);
  }

  /** Waits up to {@code millis} for the stream to end; true when it has. */
  boolean awaitEnd(long millis) throws InterruptedException {
    return ended.await(millis, TimeUnit.MILLISECONDS);
  }
}
