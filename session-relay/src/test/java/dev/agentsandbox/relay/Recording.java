package dev.agentsandbox.relay;

import dev.agentsandbox.backend.session.StepListener;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;

/** A step's output as it arrived, its two streams apart. */
final class Recording implements StepListener {
  private final ByteArrayOutputStream out = new ByteArrayOutputStream();
  private final ByteArrayOutputStream err = new ByteArrayOutputStream();

  @Override
  public synchronized void onOutput(byte[] chunk) {
    out.writeBytes(chunk);
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
}
