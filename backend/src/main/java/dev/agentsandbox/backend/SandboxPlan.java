package dev.agentsandbox.backend;

import java.util.List;
import java.util.Objects;

/**
 * What a run would create, in creation order, without creating anything.
 *
 * @param backend the backend's name
 * @param runtime the runtime the workload would run under
 * @param isolation how strong that isolation is
 * @param manifests every object the run would create, in the order it creates them
 */
public record SandboxPlan(
    String backend, String runtime, Isolation isolation, List<Manifest> manifests) {
  public SandboxPlan {
    Objects.requireNonNull(backend, "backend");
    Objects.requireNonNull(runtime, "runtime");
    Objects.requireNonNull(isolation, "isolation");
    manifests = List.copyOf(manifests);
  }
}
