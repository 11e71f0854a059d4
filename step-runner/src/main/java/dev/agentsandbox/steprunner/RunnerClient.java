package dev.agentsandbox.steprunner;

import dev.agentsandbox.backend.session.Step;
import dev.agentsandbox.backend.session.StepListener;
import dev.agentsandbox.backend.session.StepSpec;
import dev.agentsandbox.backend.session.UnableToRunStepException;
import java.io.IOException;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

/**
 * The host's end of the step runner's protocol (docs/step-runner.md) over any reliable byte stream:
 * a virtio-serial port, a pipe pair, a tunnel. The transport hands what the runner sent to {@link
 * #receive} from one thread and says when the stream {@link #ended}; the client writes whole frames
 * through {@link Transport}.
 *
 * <p>Nothing the runner sends is trusted: a frame over {@link Frame#MAX_PAYLOAD}, of an unknown
 * type, for a channel that is not open, or breaking a size it announced is a violation, after which
 * the client ignores the stream, fails every open operation and tells {@code onViolation} (the
 * backend then stops the sandbox). What the host holds for the runner is bounded: one frame being
 * decoded, and per transfer what its credit allows.
 *
 * <p>Thread-safety: every public method may be called from any thread; the reader thread only
 * decodes and dispatches, and never blocks on a caller (step output goes to each step's {@link
 * StepListener}, which must not block for long; file content goes to a bounded queue the caller's
 * thread drains).
 */
public final class RunnerClient {
  /**
   * The protocol this host speaks (docs/step-runner.md); version 2 added EXITED's connection count.
   */
  static final long PROTOCOL_VERSION = 2;

  /** How the client writes to the runner: one whole frame per call, in order. */
  public interface Transport {
    void write(byte[] frame) throws IOException;
  }

  /** How long the runner may take to answer a request, or to start a step. */
  static final Duration ANSWER_TIMEOUT = Duration.ofSeconds(120);

  private final String label;
  private final Transport transport;
  private final Consumer<String> onViolation;
  private final FrameDecoder decoder = new FrameDecoder(this::dispatch);
  private final Map<Integer, Channel> channels = new ConcurrentHashMap<>();
  private final AtomicInteger ids = new AtomicInteger();
  private final CountDownLatch hello = new CountDownLatch(1);
  private final Object sending = new Object();
  private final RunnerFiles files;
  private volatile String ended;
  private volatile boolean closing;

  /**
   * @param label what the session is called in messages ({@code run r7k2})
   * @param transport writes to the runner
   * @param onViolation told once, from the thread that found it, why the runner can no longer be
   *     trusted (or why it stopped); the caller ends the session as failed
   */
  public RunnerClient(String label, Transport transport, Consumer<String> onViolation) {
    this.label = Objects.requireNonNull(label, "label");
    this.transport = Objects.requireNonNull(transport, "transport");
    this.onViolation = Objects.requireNonNull(onViolation, "onViolation");
    this.files = new RunnerFiles(this);
  }

  /** Bytes the runner sent, in order, from the transport's one reader thread. */
  public void receive(byte[] bytes, int offset, int length) {
    if (ended != null) {
      return;
    }
    try {
      decoder.feed(bytes, offset, length);
    } catch (ProtocolViolationException e) {
      fail("the step runner broke the protocol: " + e.getMessage());
    }
  }

  /** The transport closed (the VM stopped, the pipe broke): every open operation ends. */
  public void ended() {
    end(closing ? "the session ended" : "the step runner's channel closed");
  }

  /**
   * Waits for the runner's greeting.
   *
   * @throws UnableToRunStepException when it did not come in time or the stream ended first
   */
  public void awaitReady(Duration timeout) throws InterruptedException {
    if (!hello.await(timeout.toMillis(), TimeUnit.MILLISECONDS) || ended != null) {
      throw new UnableToRunStepException(
          "waiting for the step runner of "
              + label
              + ": "
              + (ended != null ? ended : "no greeting within " + timeout.toSeconds() + " s"));
    }
  }

  /** Starts a step; see {@link dev.agentsandbox.backend.session.SessionSandbox#exec}. */
  public Step exec(StepSpec spec, StepListener listener) {
    return RunnerStep.start(this, spec, listener);
  }

  /** The file operations. */
  public RunnerFiles files() {
    return files;
  }

  /**
   * Asks the runner to kill every step and stop; the stream ends after it. Idempotent.
   *
   * @return whether the request reached the transport (now or at an earlier call)
   */
  public boolean bye() {
    synchronized (sending) {
      if (closing) {
        return true;
      }
      closing = true;
    }
    try {
      sendFrame(FrameType.BYE, 0, new byte[0]);
      return true;
    } catch (UnableToRunStepException e) {
      return false;
    }
  }

  /** Why the client stopped, if it has (the stream ended or the runner broke the protocol). */
  public java.util.Optional<String> endedBecause() {
    return java.util.Optional.ofNullable(ended);
  }

  String label() {
    return label;
  }

  boolean closing() {
    return closing;
  }

  /** Opens a channel under a fresh id; frames for it are dispatched to it from now on. */
  int open(Channel channel) {
    String why = ended;
    if (why != null) {
      throw new UnableToRunStepException("using the step runner of " + label + ": " + why);
    }
    int id = ids.incrementAndGet();
    channels.put(id, channel);
    return id;
  }

  /** Forgets a channel whose operation the host gave up on before its last frame. */
  void forget(int id) {
    channels.remove(id);
  }

  int openSteps() {
    return (int) channels.values().stream().filter(RunnerStep.class::isInstance).count();
  }

  void sendFrame(FrameType type, int id, byte[] payload) {
    String why = ended;
    if (why != null) {
      throw new UnableToRunStepException("using the step runner of " + label + ": " + why);
    }
    byte[] frame = new Frame(type, id, payload).encode();
    try {
      synchronized (sending) {
        transport.write(frame);
      }
    } catch (IOException e) {
      throw new UnableToRunStepException(
          "writing to the step runner of " + label + ": " + e.getMessage(), e);
    }
  }

  private void dispatch(Frame frame) {
    if (frame.id() == 0) {
      session(frame);
      return;
    }
    if (hello.getCount() > 0) {
      throw new ProtocolViolationException(frame + " came before the runner's greeting");
    }
    Channel channel = channels.get(frame.id());
    if (channel == null) {
      throw new ProtocolViolationException(frame + " is for a channel that is not open");
    }
    if (channel.onFrame(frame)) {
      channels.remove(frame.id(), channel);
    }
  }

  private void session(Frame frame) {
    Payload.Reader reader = new Payload.Reader(frame);
    switch (frame.type()) {
      case HELLO -> {
        long version = reader.u32();
        reader.u32();
        reader.u32();
        long maxPayload = reader.u32();
        reader.end();
        if (hello.getCount() == 0) {
          throw new ProtocolViolationException("a second greeting");
        }
        if (version != PROTOCOL_VERSION || maxPayload != Frame.MAX_PAYLOAD) {
          throw new ProtocolViolationException(
              "the runner speaks version "
                  + version
                  + " (this host speaks "
                  + PROTOCOL_VERSION
                  + ")");
        }
        hello.countDown();
      }
      case FATAL -> {
        String text = reader.str(1024);
        fail("the step runner stopped: " + Refusal.printable(text));
      }
      default -> throw new ProtocolViolationException(frame + " is not a session frame");
    }
  }

  /**
   * A violation a caller's thread found in what the runner answered: the session fails as if the
   * reader had found it, and the caller gets an exception to throw.
   */
  UnableToRunStepException violated(String attempt, ProtocolViolationException e) {
    String why = "the step runner broke the protocol: " + e.getMessage();
    fail(why);
    return new UnableToRunStepException(attempt + ": " + why);
  }

  private void fail(String why) {
    if (end(why)) {
      onViolation.accept(why);
    }
  }

  private boolean end(String why) {
    synchronized (channels) {
      if (ended != null) {
        return false;
      }
      ended = why;
    }
    hello.countDown();
    for (Channel channel : channels.values()) {
      channel.onEnd(why);
    }
    channels.clear();
    return true;
  }
}
