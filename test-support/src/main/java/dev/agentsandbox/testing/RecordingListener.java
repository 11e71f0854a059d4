package dev.agentsandbox.testing;

import dev.agentsandbox.backend.SandboxListener;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/** Records what a sandbox produced: its output, and the proxy's decision lines in order. */
public final class RecordingListener implements SandboxListener {
  private final ByteArrayOutputStream output = new ByteArrayOutputStream();

  /** The proxy's decision lines, as the backend handed them over. */
  public final List<String> decisions = new CopyOnWriteArrayList<>();

  @Override
  public void onOutput(byte[] chunk) {
    synchronized (output) {
      output.writeBytes(chunk);
    }
  }

  @Override
  public void onEgressDecision(String jsonLine) {
    decisions.add(jsonLine);
  }

  /** The output so far, as UTF-8. */
  public String output() {
    synchronized (output) {
      return output.toString(StandardCharsets.UTF_8);
    }
  }
}
