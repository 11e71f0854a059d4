package dev.agentsandbox.steprunner;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A request answered by at most {@code maxInfos} INFO frames, then END (with one number) or
 * REFUSED: stat, list, mkdir, put. The INFO frames are kept (bounded by {@code maxInfos}).
 */
final class Request implements Channel {
  /** What came back: the INFO frames and END's number. */
  record Answer(List<Frame> infos, long value) {}

  private final int maxInfos;
  private final List<Frame> infos = new ArrayList<>();
  private final CompletableFuture<Answer> answer = new CompletableFuture<>();

  Request(int maxInfos) {
    this.maxInfos = maxInfos;
  }

  @Override
  public boolean onFrame(Frame frame) {
    switch (frame.type()) {
      case INFO -> {
        if (infos.size() >= maxInfos) {
          throw new ProtocolViolationException(
              frame + ": more entries than the " + maxInfos + " asked for");
        }
        infos.add(frame);
        return false;
      }
      case END -> {
        Payload.Reader reader = new Payload.Reader(frame);
        long value = reader.u64();
        reader.end();
        answer.complete(new Answer(List.copyOf(infos), value));
        return true;
      }
      case REFUSED -> {
        answer.completeExceptionally(new Refused(Refusal.read(frame)));
        return true;
      }
      default -> throw new ProtocolViolationException(frame + " does not answer a request");
    }
  }

  @Override
  public void onEnd(String why) {
    answer.completeExceptionally(new IllegalStateException(why));
  }

  /** Whether the runner already answered (a put refused before its content was all sent). */
  boolean answered() {
    return answer.isDone();
  }

  /**
   * Waits for the answer.
   *
   * @throws Refused when the runner refused
   * @throws IllegalStateException when the session ended first (its message says why)
   * @throws TimeoutException when no answer came in time
   */
  Answer await() throws Refused, TimeoutException, InterruptedException {
    try {
      return answer.get(RunnerClient.ANSWER_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof Refused refused) {
        throw refused;
      }
      throw (IllegalStateException) e.getCause();
    }
  }

  /** The runner's refusal, as a checked exception so that no caller forgets it. */
  static final class Refused extends Exception {
    private static final long serialVersionUID = 1L;
    private final transient Refusal refusal;

    Refused(Refusal refusal) {
      super(refusal.text(), null, false, false);
      this.refusal = refusal;
    }

    Refusal refusal() {
      return refusal;
    }
  }
}
