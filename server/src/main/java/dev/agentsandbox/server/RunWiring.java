package dev.agentsandbox.server;

import dev.agentsandbox.backend.SandboxBackend;
import dev.agentsandbox.runs.OperatorEgress;
import dev.agentsandbox.runs.RunContractServices;
import dev.agentsandbox.runs.RunSettings;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the control plane runs sandboxes with: its backends (in the order {@code auto} breaks ties:
 * firecracker, k8s, docker), the operator's internal destinations and name mappings, the run
 * limits, and how the reaper is scheduled.
 *
 * @param backends the backends this control plane may use
 * @param operator internal destinations and static names for every run's proxy
 * @param settings run limits and this instance's identity
 * @param reaping starts calling the given reaper pass (at once, then periodically) and returns what
 *     stops it: {@link #every} on one control plane, a Lease election where replicas share a
 *     cluster
 * @param contract artifact storage, JWT keys and credential commands for the run contract
 */
public record RunWiring(
    List<SandboxBackend> backends,
    OperatorEgress operator,
    RunSettings settings,
    Function<Runnable, AutoCloseable> reaping,
    RunContractServices.Config contract) {
  private static final Logger LOG = LoggerFactory.getLogger(RunWiring.class);

  public RunWiring {
    backends = List.copyOf(backends);
    Objects.requireNonNull(operator, "operator");
    Objects.requireNonNull(settings, "settings");
    Objects.requireNonNull(reaping, "reaping");
    Objects.requireNonNull(contract, "contract");
  }

  /** Without artifact storage, JWT keys or credential commands (run tokens only). */
  public RunWiring(
      List<SandboxBackend> backends,
      OperatorEgress operator,
      RunSettings settings,
      Function<Runnable, AutoCloseable> reaping) {
    this(backends, operator, settings, reaping, RunContractServices.Config.NONE);
  }

  /** The same wiring with {@code contract} for artifact storage, JWT keys and commands. */
  public RunWiring withContract(RunContractServices.Config contract) {
    return new RunWiring(backends, operator, settings, reaping, contract);
  }

  /**
   * Releases what each backend holds beside its runs ({@link SandboxBackend#close}: the Docker
   * backend's proxy-pool standbys), for a composition whose backends no server took (a start
   * refused after they were made); a server closes its own at its close.
   */
  public void closeBackends() {
    close(backends);
  }

  /** Closes each backend; one backend's failure is logged and the others are still closed. */
  static void close(List<SandboxBackend> backends) {
    for (SandboxBackend backend : backends) {
      try {
        backend.close();
      } catch (RuntimeException e) {
        LOG.warn("releasing the {} backend: {}", backend.name(), e.getMessage());
      }
    }
  }

  /** No backends: every run is refused as backend_unavailable; config and audit still work. */
  public static RunWiring none(String instanceId) {
    return new RunWiring(
        List.of(),
        OperatorEgress.NONE,
        RunSettings.defaults(instanceId),
        every(Duration.ofHours(1)));
  }

  /** Reaps at once and then every {@code period} on a thread of its own. */
  public static Function<Runnable, AutoCloseable> every(Duration period) {
    if (period.isNegative() || period.isZero()) {
      throw new IllegalArgumentException("the reaper period must be positive");
    }
    return pass -> {
      ScheduledExecutorService scheduler =
          Executors.newSingleThreadScheduledExecutor(
              Thread.ofPlatform().name("agent-sandbox-reaper").daemon().factory());
      scheduler.scheduleWithFixedDelay(
          () -> {
            try {
              pass.run();
            } catch (RuntimeException e) {
              LOG.warn("reaper pass failed: {}", e.getMessage());
            }
          },
          0,
          period.toMillis(),
          TimeUnit.MILLISECONDS);
      return scheduler::shutdownNow;
    };
  }
}
