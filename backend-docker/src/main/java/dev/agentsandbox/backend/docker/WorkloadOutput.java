package dev.agentsandbox.backend.docker;

import com.github.dockerjava.api.async.ResultCallback;
import com.github.dockerjava.api.model.Frame;
import dev.agentsandbox.backend.SandboxListener;

/** Follows the workload container's combined output and hands every chunk to the listener. */
class WorkloadOutput extends ResultCallback.Adapter<Frame> {
  private final SandboxListener listener;

  WorkloadOutput(SandboxListener listener) {
    this.listener = listener;
  }

  @Override
  public void onNext(Frame frame) {
    byte[] payload = frame.getPayload();
    if (payload != null && payload.length > 0) {
      listener.onOutput(payload);
    }
  }
}
