package dev.agentsandbox.backend;

import java.util.Objects;

/**
 * What a backend found on this host: whether it can create sandboxes here, with which runtime and
 * how strong the isolation is, and if not, why not in words an operator can act on.
 *
 * @param backend the backend's name ({@code docker}, {@code k8s}, {@code firecracker})
 * @param available whether the backend can create sandboxes on this host now
 * @param isolation the isolation a sandbox would get (meaningful only when available)
 * @param runtime the runtime a sandbox would use, such as {@code runsc} or {@code runc}
 * @param detail what was checked and found, or why the backend is unavailable
 */
public record Probe(
    String backend, boolean available, Isolation isolation, String runtime, String detail) {
  public Probe {
    Objects.requireNonNull(backend, "backend");
    Objects.requireNonNull(isolation, "isolation");
    Objects.requireNonNull(runtime, "runtime");
    Objects.requireNonNull(detail, "detail");
  }

  /** A backend that cannot run here, with the reason. */
  public static Probe unavailable(String backend, String why) {
    return new Probe(backend, false, Isolation.CONTAINER, "none", why);
  }
}
