package dev.agentsandbox.backend;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * Every backend's probe, made in the background and kept: a probe can take seconds (the microVM
 * backend boots a guest under KVM to learn whether this host's KVM runs one, and waits 20 s for a
 * KVM that does not), and no request should wait on the probe of a backend it did not name.
 *
 * <p>{@link #start} probes each backend at once, on a thread of its own, and again every {@code
 * every}, and soon after a reader found the answer older than {@code staleAfter} (the reader is not
 * kept waiting: it gets the answer there is). {@link #current} answers without waiting but for a
 * backend's first probe, for which it waits at most what its caller allows; {@link #fresh} is for a
 * backend a request named: it joins the probe running now, or probes now, and keeps the answer.
 *
 * <p>Thread-safe.
 */
public final class ProbeCache implements AutoCloseable {
  /** How often each backend is probed again, read or not. */
  public static final Duration EVERY = Duration.ofSeconds(30);

  /** How old an answer may be before a read asks for a new probe. */
  public static final Duration STALE_AFTER = Duration.ofSeconds(5);

  /**
   * What is known of one backend's probe.
   *
   * @param backend the backend's name
   * @param last the last probe's answer, if one has come yet
   * @param answeredAt when it came
   * @param running whether a probe of it is running now
   * @param since when the running probe started, or else when the last answer came
   */
  public record Status(
      String backend,
      Optional<Probe> last,
      Optional<Instant> answeredAt,
      boolean running,
      Instant since) {
    public Status {
      Objects.requireNonNull(backend, "backend");
      Objects.requireNonNull(last, "last");
      Objects.requireNonNull(answeredAt, "answeredAt");
      Objects.requireNonNull(since, "since");
    }

    /** Whether no answer has come yet: the first probe is still running. */
    public boolean pending() {
      return last.isEmpty();
    }

    /** The answer to act on: the last one, or before the first an unavailable "still probing". */
    public Probe probe(Instant now) {
      return last.orElseGet(
          () ->
              Probe.unavailable(
                  backend,
                  "its probe is still running ("
                      + Duration.between(since, now).toSeconds()
                      + " s so far); ask again shortly"));
    }
  }

  private final Map<SandboxBackend, Slot> slots = new LinkedHashMap<>();
  private final Clock clock;
  private final Duration every;
  private final Duration staleAfter;
  private volatile boolean closed;

  /** One backend's state, guarded by its own monitor. */
  private static final class Slot {
    Probe last;
    Instant answeredAt;
    boolean running;
    boolean wanted;
    Instant since;
    Thread thread;
  }

  public ProbeCache(List<SandboxBackend> backends) {
    this(backends, Clock.systemUTC(), EVERY, STALE_AFTER);
  }

  public ProbeCache(
      List<SandboxBackend> backends, Clock clock, Duration every, Duration staleAfter) {
    this.clock = clock;
    this.every = every;
    this.staleAfter = staleAfter;
    for (SandboxBackend backend : backends) {
      Slot slot = new Slot();
      slot.since = clock.instant();
      slots.put(backend, slot);
    }
  }

  /** The backends, in the order given. */
  public List<SandboxBackend> backends() {
    return List.copyOf(slots.keySet());
  }

  /** Starts probing each backend on a daemon thread of its own; idempotent. */
  public ProbeCache start() {
    slots.forEach(
        (backend, slot) -> {
          synchronized (slot) {
            if (slot.thread == null && !closed) {
              slot.running = true;
              slot.thread =
                  Thread.ofPlatform()
                      .daemon()
                      .name("agent-sandbox-probe-" + backend.name())
                      .start(() -> loop(backend, slot));
            }
          }
        });
    return this;
  }

  private void loop(SandboxBackend backend, Slot slot) {
    try {
      while (!closed) {
        probe(backend, slot);
        synchronized (slot) {
          long until = System.nanoTime() + every.toNanos();
          while (!slot.wanted && !closed && System.nanoTime() < until) {
            slot.wait(Math.max(1, (until - System.nanoTime()) / 1_000_000));
          }
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Probes now, in this thread, with the slot marked running, and keeps the answer. */
  private Probe probe(SandboxBackend backend, Slot slot) {
    synchronized (slot) {
      slot.running = true;
      slot.wanted = false;
      slot.since = clock.instant();
    }
    Probe probe;
    try {
      probe = backend.probe();
    } catch (RuntimeException e) {
      probe = Probe.unavailable(backend.name(), "probing failed: " + e.getMessage());
    }
    synchronized (slot) {
      slot.last = probe;
      slot.answeredAt = clock.instant();
      slot.running = false;
      slot.since = slot.answeredAt;
      slot.notifyAll();
    }
    return probe;
  }

  /**
   * The backend's state now, without waiting; an answer older than {@code staleAfter} makes the
   * background probe it again soon.
   */
  public Status status(SandboxBackend backend) {
    Slot slot = slot(backend);
    synchronized (slot) {
      if (slot.last != null
          && !slot.running
          && slot.answeredAt.plus(staleAfter).isBefore(clock.instant())) {
        slot.wanted = true;
        slot.notifyAll();
      }
      return new Status(
          backend.name(),
          Optional.ofNullable(slot.last),
          Optional.ofNullable(slot.answeredAt),
          slot.running,
          slot.since);
    }
  }

  /**
   * The backend's last answer without waiting, but for its first, which is waited for at most
   * {@code firstWait}; past that, an unavailable answer that says the probe is still running.
   */
  public Probe current(SandboxBackend backend, Duration firstWait) throws InterruptedException {
    Slot slot = slot(backend);
    long until = System.nanoTime() + firstWait.toNanos();
    synchronized (slot) {
      while (slot.last == null && !closed) {
        long left = until - System.nanoTime();
        if (left <= 0) {
          break;
        }
        slot.wait(Math.max(1, left / 1_000_000));
      }
    }
    return status(backend).probe(clock.instant());
  }

  /**
   * A probe made for a request that named the backend: the one running now (waited for at most
   * {@code max}), or a new one made now in the caller's thread; kept either way.
   */
  public Probe fresh(SandboxBackend backend, Duration max) throws InterruptedException {
    Slot slot = slot(backend);
    long until = System.nanoTime() + max.toNanos();
    synchronized (slot) {
      if (slot.running) {
        Instant started = slot.since;
        while (slot.running && started.equals(slot.since) && !closed) {
          long left = until - System.nanoTime();
          if (left <= 0) {
            return new Status(backend.name(), Optional.empty(), Optional.empty(), true, started)
                .probe(clock.instant());
          }
          slot.wait(Math.max(1, left / 1_000_000));
        }
        if (slot.last != null) {
          return slot.last;
        }
      }
    }
    return probe(backend, slot);
  }

  private Slot slot(SandboxBackend backend) {
    Slot slot = slots.get(backend);
    if (slot == null) {
      throw new IllegalArgumentException("backend " + backend.name() + " is not in this cache");
    }
    return slot;
  }

  /** Stops probing; a probe running now finishes on its own (its thread is a daemon). */
  @Override
  public void close() {
    closed = true;
    for (Slot slot : slots.values()) {
      synchronized (slot) {
        slot.notifyAll();
      }
    }
  }
}
