package dev.agentsandbox.backend.docker;

import com.github.dockerjava.api.async.ResultCallback;
import com.github.dockerjava.api.model.Frame;
import com.github.dockerjava.api.model.StreamType;
import dev.agentsandbox.backend.SandboxListener;

/**
 * Follows the workload container's output and hands every chunk to the listener, standard error
 * apart from standard output (the container has no terminal, so the log stream frames say which).
 */
final class WorkloadOutput extends ResultCallback.Adapter<Frame> {
  private final SandboxListener listener;

  WorkloadOutput(SandboxListener listener) {
    this.listener = listener;
  }

  @Override
  public void onNext(Frame frame) {
    byte[] payload = frame.getPayload();
    if (payload != null && payload.length > 0) {
      if (frame.getStreamType() == StreamType.STDERR) {
        listener.onErrorOutput(payload);
      } else {
        listener.onOutput(payload);
      }
    }
  }
}
