package dev.agentsandbox.steprunner;

import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A read or a walk: the runner's frames queued for the caller's thread, which writes them out at
 * its own pace. The runner sends DATA, INFO and SKIPPED frames only against credit the host granted
 * (each costs its payload plus {@link #FRAME_COST}); the reader thread refuses a frame the credit
 * does not cover, so the queue never holds more than {@link #WINDOW} bytes of them, however slowly
 * the caller drains it.
 */
final class Transfer implements Channel {
  /** The credit granted up front and kept topped up. */
  static final int WINDOW = 1 << 20;

  /** What each frame costs beyond its payload, so that many small frames are bounded too. */
  static final int FRAME_COST = 64;

  private static final Frame ENDED = new Frame(FrameType.FATAL, 0, new byte[0]);

  private final BlockingQueue<Frame> queue = new LinkedBlockingQueue<>();
  private final RunnerClient client;
  private long credit = WINDOW;
  private long returned;
  private volatile boolean abandoned;
  private volatile String endedBecause;
  private int id;

  Transfer(RunnerClient client) {
    this.client = client;
  }

  void id(int value) {
    this.id = value;
  }

  static long cost(Frame frame) {
    return switch (frame.type()) {
      case DATA, INFO, SKIPPED -> frame.payload().length + FRAME_COST;
      default -> 0;
    };
  }

  @Override
  public boolean onFrame(Frame frame) {
    switch (frame.type()) {
      case SIZE, DATA, INFO, SKIPPED, END, REFUSED -> {}
      default -> throw new ProtocolViolationException(frame + " does not belong to a transfer");
    }
    synchronized (this) {
      credit -= cost(frame);
      if (credit < 0) {
        throw new ProtocolViolationException(frame + " goes past the credit the host granted");
      }
    }
    boolean last = frame.type() == FrameType.END || frame.type() == FrameType.REFUSED;
    if (!abandoned) {
      queue.add(frame);
    }
    return last;
  }

  @Override
  public void onEnd(String why) {
    endedBecause = why;
    queue.add(ENDED);
  }

  /**
   * The next frame, waiting at most the answer time-out.
   *
   * @throws IllegalStateException when the session ended first or the runner stalled
   */
  Frame next() throws InterruptedException {
    Frame frame = queue.poll(RunnerClient.ANSWER_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
    if (frame == ENDED) {
      throw new IllegalStateException(endedBecause);
    }
    if (frame == null) {
      abandon();
      throw new IllegalStateException(
          "the step runner sent nothing for " + RunnerClient.ANSWER_TIMEOUT.toSeconds() + " s");
    }
    return frame;
  }

  /** The caller wrote a frame out: its cost goes back to the runner, in batches. */
  void consumed(Frame frame) {
    long more;
    synchronized (this) {
      returned += cost(frame);
      if (returned < WINDOW / 4) {
        return;
      }
      more = returned;
      returned = 0;
      credit += more;
    }
    client.sendFrame(FrameType.CREDIT, id, new Payload.Writer().u32(more).done());
  }

  /** The caller gives up (its stream failed): the runner is told to stop; frames are dropped. */
  void abandon() {
    abandoned = true;
    queue.clear();
    try {
      client.sendFrame(FrameType.CANCEL, id, new byte[0]);
    } catch (RuntimeException e) {
      // The runner is gone already.
    }
  }
}
