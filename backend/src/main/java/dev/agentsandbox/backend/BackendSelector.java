package dev.agentsandbox.backend;

import java.time.Duration;
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
 * <p>Probes come from a {@link ProbeCache} when it was given one (the control plane's): a request
 * that names a backend gets a fresh probe of it (the one running now, or a new one), and {@code
 * auto} takes the answers there are without waiting on a slow probe, except for the first answers
 * of a control plane that just started, for at most {@link #FIRST_PROBE_WAIT}; a backend whose
 * first probe is still running is passed over and named in {@link Selection#stillProbing()}.
 * Without a cache it probes every backend on every call.
 *
 * <p>Immutable and thread-safe.
 */
public final class BackendSelector {
  /** The configuration value that asks for the strongest available backend. */
  public static final String AUTO = "auto";

  /**
   * How long {@code auto} waits, in all, for the first probes of backends that have not answered
   * yet (a control plane that just started): long enough for a Docker daemon's ping, far shorter
   * than a KVM boot.
   */
  public static final Duration FIRST_PROBE_WAIT = Duration.ofSeconds(2);

  /** How long a request that names a backend waits for that backend's probe. */
  public static final Duration NAMED_PROBE_WAIT = Duration.ofSeconds(60);

  private final List<SandboxBackend> backends;
  private final ProbeCache probes;

  /** Probes every backend on every call. */
  public BackendSelector(List<SandboxBackend> backends) {
    this.backends = List.copyOf(backends);
    this.probes = null;
  }

  /** Takes probes from the cache (which the caller starts and closes). */
  public BackendSelector(ProbeCache probes) {
    this.backends = probes.backends();
    this.probes = probes;
  }

  /**
   * A chosen backend and what its probe found.
   *
   * @param stillProbing the backends {@code auto} passed over because their first probe had not
   *     answered yet (empty for a named backend)
   */
  public record Selection(SandboxBackend backend, Probe probe, List<String> stillProbing) {
    public Selection {
      Objects.requireNonNull(backend, "backend");
      Objects.requireNonNull(probe, "probe");
      stillProbing = List.copyOf(stillProbing);
    }

    public Selection(SandboxBackend backend, Probe probe) {
      this(backend, probe, List.of());
    }
  }

  /**
   * The probe of a backend a request named: fresh (joining one running now), waited for at most
   * {@link #NAMED_PROBE_WAIT}.
   */
  public Probe probeNamed(SandboxBackend backend) {
    if (probes == null) {
      return backend.probe();
    }
    try {
      return probes.fresh(backend, NAMED_PROBE_WAIT);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return probes.status(backend).probe(java.time.Instant.now());
    }
  }

  /** The probe {@code auto} acts on: the one there is, waiting only for a first, until then. */
  private ProbeCache.Status probeForAuto(SandboxBackend backend, long firstUntilNanos) {
    try {
      probes.current(backend, Duration.ofNanos(Math.max(0, firstUntilNanos - System.nanoTime())));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return probes.status(backend);
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
    List<String> stillProbing = new ArrayList<>();
    boolean known = false;
    long firstUntil = System.nanoTime() + FIRST_PROBE_WAIT.toNanos();
    for (SandboxBackend backend : backends) {
      if (!configured.equals(AUTO) && !configured.equals(backend.name())) {
        continue;
      }
      known = true;
      Probe probe;
      if (configured.equals(AUTO) && probes != null) {
        ProbeCache.Status status = probeForAuto(backend, firstUntil);
        probe = status.probe(java.time.Instant.now());
        if (status.pending()) {
          stillProbing.add(backend.name());
          attempts.add(
              backend.name() + ": " + probe.detail() + " (auto does not wait for a slow probe)");
          continue;
        }
      } else {
        probe = probeNamed(backend);
      }
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
        usable.add(new Selection(backend, probe, stillProbing));
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
        .map(s -> new Selection(s.backend(), s.probe(), stillProbing))
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
