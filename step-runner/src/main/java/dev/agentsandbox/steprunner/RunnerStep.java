package dev.agentsandbox.steprunner;

import dev.agentsandbox.backend.session.Step;
import dev.agentsandbox.backend.session.StepEnd;
import dev.agentsandbox.backend.session.StepListener;
import dev.agentsandbox.backend.session.StepSpec;
import dev.agentsandbox.backend.session.UnableToRunStepException;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * One step on the runner: EXEC, its standard input, then STARTED, output chunks and EXITED back.
 * Output goes straight to the step's listener from the reader thread, in order; nothing of it is
 * kept here.
 */
final class RunnerStep implements Step, Channel {
  private final RunnerClient client;
  private final StepSpec spec;
  private final StepListener listener;
  private final CompletableFuture<Long> started = new CompletableFuture<>();
  private final CompletableFuture<StepEnd> end = new CompletableFuture<>();
  private volatile int id;

  private RunnerStep(RunnerClient client, StepSpec spec, StepListener listener) {
    this.client = client;
    this.spec = spec;
    this.listener = listener;
  }

  static RunnerStep start(RunnerClient client, StepSpec spec, StepListener listener) {
    if (client.openSteps() >= 8) {
      throw new UnableToRunStepException(
          "starting step " + spec.number() + " in " + client.label() + ": 8 steps are running");
    }
    RunnerStep step = new RunnerStep(client, spec, listener);
    Payload.Writer exec = new Payload.Writer().u32(spec.command().size());
    spec.command().forEach(exec::str);
    exec.u32(spec.env().size());
    for (Map.Entry<String, String> pair : spec.env().entrySet()) {
      exec.str(pair.getKey() + "=" + pair.getValue());
    }
    byte[] payload = exec.path(spec.cwd()).done();
    step.id = client.open(step);
    try {
      client.sendFrame(FrameType.EXEC, step.id, payload);
      byte[] stdin = spec.stdin();
      for (int at = 0; at < stdin.length; at += Frame.MAX_PAYLOAD) {
        int to = Math.min(stdin.length, at + Frame.MAX_PAYLOAD);
        client.sendFrame(FrameType.STDIN, step.id, Arrays.copyOfRange(stdin, at, to));
      }
      client.sendFrame(FrameType.STDIN_END, step.id, new byte[0]);
      step.started.get(RunnerClient.ANSWER_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
      return step;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      step.kill();
      throw new UnableToRunStepException(step.what() + ": interrupted", e);
    } catch (TimeoutException e) {
      step.kill();
      throw new UnableToRunStepException(
          step.what()
              + ": the step runner did not start it within "
              + RunnerClient.ANSWER_TIMEOUT.toSeconds()
              + " s",
          e);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof RuntimeException refused) {
        throw refused;
      }
      throw new UnableToRunStepException(step.what() + ": " + e.getCause(), e.getCause());
    }
  }

  private String what() {
    return "starting step "
        + spec.number()
        + " ("
        + Refusal.printable(spec.command().get(0))
        + ") in "
        + spec.cwd()
        + " of "
        + client.label();
  }

  @Override
  public int number() {
    return spec.number();
  }

  @Override
  public Optional<StepEnd> awaitEnd(Instant until) throws InterruptedException {
    long millis = Math.max(0, Duration.between(Instant.now(), until).toMillis());
    try {
      return Optional.of(end.get(millis, TimeUnit.MILLISECONDS));
    } catch (TimeoutException e) {
      return Optional.empty();
    } catch (ExecutionException e) {
      throw new IllegalStateException("a step's end never completes exceptionally", e);
    }
  }

  @Override
  public void kill() {
    if (!end.isDone()) {
      try {
        client.sendFrame(FrameType.KILL, id, new byte[0]);
      } catch (UnableToRunStepException e) {
        // The runner is gone, and the step with it: its end arrives through onEnd.
      }
    }
  }

  @Override
  public boolean onFrame(Frame frame) {
    switch (frame.type()) {
      case STARTED -> {
        Payload.Reader reader = new Payload.Reader(frame);
        long pid = reader.u32();
        reader.end();
        if (!started.complete(pid)) {
          throw new ProtocolViolationException(frame + ": the step had started already");
        }
        return false;
      }
      case STDOUT, STDERR -> {
        if (!started.isDone()) {
          throw new ProtocolViolationException(frame + " came before the step started");
        }
        if (frame.type() == FrameType.STDOUT) {
          listener.onOutput(frame.payload());
        } else {
          listener.onErrorOutput(frame.payload());
        }
        return false;
      }
      case EXITED -> {
        if (!started.isDone()) {
          throw new ProtocolViolationException(frame + " came before the step started");
        }
        end.complete(exited(frame));
        return true;
      }
      case REFUSED -> {
        if (started.isDone()) {
          throw new ProtocolViolationException(frame + " came after the step started");
        }
        started.completeExceptionally(Refusal.read(frame).exception(what(), spec.cwd()));
        return true;
      }
      default -> throw new ProtocolViolationException(frame + " is not a step's frame");
    }
  }

  private static StepEnd exited(Frame frame) {
    Payload.Reader reader = new Payload.Reader(frame);
    long how = reader.u32();
    long code = reader.u32();
    long killed = reader.u32();
    long opensHigh = reader.u32();
    long opensLow = reader.u32();
    reader.end();
    OptionalLong opened;
    if (opensHigh == 0xffffffffL && opensLow == 0xffffffffL) {
      opened = OptionalLong.empty();
    } else if (opensHigh > 0x7fffffffL) {
      throw new ProtocolViolationException(frame + " holds an impossible count of connections");
    } else {
      opened = OptionalLong.of(opensHigh << 32 | opensLow);
    }
    if (how > 1
        || killed > 1
        || (how == 0 && code > 255)
        || (how == 1 && (code < 1 || code > 64))) {
      throw new ProtocolViolationException(frame + " holds an impossible exit status");
    }
    int status = (int) (how == 1 ? 128 + code : code);
    String detail =
        how == 1
            ? "killed by signal " + code + " (status " + status + ")"
            : "exited with status " + status;
    return new StepEnd(
        killed == 1 ? StepEnd.End.KILLED : StepEnd.End.EXIT,
        OptionalInt.of(status),
        detail,
        opened);
  }

  @Override
  public void onEnd(String why) {
    started.completeExceptionally(new UnableToRunStepException(what() + ": " + why));
    end.complete(
        new StepEnd(
            client.closing() ? StepEnd.End.KILLED : StepEnd.End.ERROR, OptionalInt.empty(), why));
  }
}
