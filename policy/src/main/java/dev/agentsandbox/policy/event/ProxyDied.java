package dev.agentsandbox.policy.event;

import java.util.Map;
import java.util.Objects;

/**
 * {@code agent_sandbox.proxy_died}: the run's proxy stopped under a running workload, which was
 * then stopped.
 *
 * @param backend the run's backend
 * @param message what the backend saw, with the proxy's exit status
 */
public record ProxyDied(String backend, String message) implements RunEvent {
  public ProxyDied {
    Objects.requireNonNull(backend, "backend");
    Objects.requireNonNull(message, "message");
  }

  @Override
  public EventType type() {
    return EventType.PROXY_DIED;
  }

  @Override
  public Map<String, Object> toTree() {
    return Fields.tree().put("backend", backend).put("message", message).build();
  }

  static ProxyDied read(Object data) {
    Fields f = Fields.of(EventType.PROXY_DIED, data);
    ProxyDied event = new ProxyDied(f.string("backend"), f.string("message", ""));
    f.done();
    return event;
  }
}
