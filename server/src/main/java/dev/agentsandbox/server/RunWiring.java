package dev.agentsandbox.server;

import dev.agentsandbox.backend.SandboxBackend;
import dev.agentsandbox.runs.OperatorEgress;
import dev.agentsandbox.runs.RunSettings;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.function.BooleanSupplier;

/**
 * What the control plane runs sandboxes with: its backends (in the order {@code auto} breaks ties:
 * firecracker, k8s, docker), the operator's internal destinations and name mappings, the run
 * limits, and how often and where the reaper runs.
 *
 * @param backends the backends this control plane may use
 * @param operator internal destinations and static names for every run's proxy
 * @param settings run limits and this instance's identity
 * @param reapEvery how often the reaper passes (it also passes at start-up)
 * @param isLeader whether this replica reaps now; always true for a single control plane
 */
public record RunWiring(
    List<SandboxBackend> backends,
    OperatorEgress operator,
    RunSettings settings,
    Duration reapEvery,
    BooleanSupplier isLeader) {
  public RunWiring {
    backends = List.copyOf(backends);
    Objects.requireNonNull(operator, "operator");
    Objects.requireNonNull(settings, "settings");
    Objects.requireNonNull(reapEvery, "reapEvery");
    Objects.requireNonNull(isLeader, "isLeader");
    if (reapEvery.isNegative() || reapEvery.isZero()) {
      throw new IllegalArgumentException("reapEvery must be positive");
    }
  }

  /** No backends: every run is refused as backend_unavailable; plan and config still work. */
  public static RunWiring none(String instanceId) {
    return new RunWiring(
        List.of(),
        OperatorEgress.NONE,
        RunSettings.defaults(instanceId),
        Duration.ofMinutes(1),
        () -> true);
  }
}
