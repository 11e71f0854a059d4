package dev.agentsandbox.backend;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;

/**
 * Picks the backend a run uses: the one the configuration names, or with {@code auto} the strongest
 * this host has. A named backend the host lacks refuses; it never falls back to a weaker one
 * (docs/architecture.md invariant 9).
 *
 * <p>{@code auto} orders by {@link Isolation} (a microVM over gVisor over a plain container), then
 * by the order the backends were given in, which the composition root sets to firecracker, k8s,
 * docker: at equal isolation a cluster spreads load and survives a node, a local daemon does not.
 * {@code auto} never picks a backend that offers only {@link Isolation#EMULATED}: software
 * emulation is for hosts an operator chose it for, by naming the backend.
 *
 * <p>Immutable and thread-safe; it probes on every call, since a daemon can come and go.
 */
public final class BackendSelector {
  /** The configuration value that asks for the strongest available backend. */
  public static final String AUTO = "auto";

  private final List<SandboxBackend> backends;

  public BackendSelector(List<SandboxBackend> backends) {
    this.backends = List.copyOf(backends);
  }

  /** A chosen backend and what its probe found. */
  public record Selection(SandboxBackend backend, Probe probe) {
    public Selection {
      Objects.requireNonNull(backend, "backend");
      Objects.requireNonNull(probe, "probe");
    }
  }

  /** The backend of that name, whether or not it is available here. */
  public java.util.Optional<SandboxBackend> named(String name) {
    return backends.stream().filter(b -> b.name().equals(name)).findFirst();
  }

  /**
   * Chooses a backend.
   *
   * @param configured {@code auto} or a backend's name
   * @param requireRuntimeClass refuse unless the chosen backend isolates with gVisor or stronger
   * @throws NoUsableBackendException listing every backend tried and why it was not used
   */
  public Selection select(String configured, boolean requireRuntimeClass) {
    List<String> attempts = new ArrayList<>();
    List<Selection> usable = new ArrayList<>();
    boolean known = false;
    for (SandboxBackend backend : backends) {
      if (!configured.equals(AUTO) && !configured.equals(backend.name())) {
        continue;
      }
      known = true;
      Probe probe = backend.probe();
      if (!probe.available()) {
        attempts.add(backend.name() + ": " + probe.detail());
      } else if (configured.equals(AUTO) && probe.isolation() == Isolation.EMULATED) {
        attempts.add(
            backend.name()
                + ": offers only software emulation, which auto never picks (name the backend to"
                + " use it)");
      } else if (requireRuntimeClass && probe.isolation().compareTo(Isolation.GVISOR) < 0) {
        attempts.add(
            backend.name()
                + ": offers only "
                + probe.runtime()
                + " and require_runtime_class demands gVisor or stronger");
      } else {
        usable.add(new Selection(backend, probe));
      }
    }
    if (!known) {
      throw new NoUsableBackendException(
          "backend '" + configured + "' is not one this control plane knows", List.of());
    }
    // A stable sort keeps the given order among equals.
    return usable.stream()
        .sorted(Comparator.comparing((Selection s) -> s.probe().isolation()).reversed())
        .findFirst()
        .orElseThrow(
            () ->
                new NoUsableBackendException(
                    configured.equals(AUTO)
                        ? "no sandbox backend is usable on this host"
                        : "backend '"
                            + configured
                            + "' is not usable on this host (it is never"
                            + " replaced by a weaker one)",
                    attempts));
  }
}
