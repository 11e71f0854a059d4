package dev.agentsandbox.steprunner;

import dev.agentsandbox.backend.session.StepListener;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Instant;

/** A step's output as it arrived, its two streams apart. */
final class Recording implements StepListener {
  private final ByteArrayOutputStream out = new ByteArrayOutputStream();
  private final ByteArrayOutputStream err = new ByteArrayOutputStream();
  private long outBytes;
  volatile Instant firstOutput;

  @Override
  public synchronized void onOutput(byte[] chunk) {
    if (firstOutput == null) {
      firstOutput = Instant.now();
    }
    outBytes += chunk.length;
    if (out.size() < (1 << 20)) {
      out.writeBytes(chunk);
    }
  }

  @Override
  public synchronized void onErrorOutput(byte[] chunk) {
    err.writeBytes(chunk);
  }

  synchronized String out() {
    return out.toString(StandardCharsets.UTF_8);
  }

  synchronized String err() {
    return err.toString(StandardCharsets.UTF_8);
  }

  synchronized long outBytes() {
    return outBytes;
  }
}
