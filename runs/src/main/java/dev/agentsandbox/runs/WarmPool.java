package dev.agentsandbox.runs;

import dev.agentsandbox.backend.BackendSelector.Selection;
import dev.agentsandbox.backend.NoUsableBackendException;
import dev.agentsandbox.backend.PreparedSandbox;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.backend.SandboxBackend;
import dev.agentsandbox.policy.config.AgentSettings;
import dev.agentsandbox.policy.config.Resources;
import dev.agentsandbox.policy.config.RunEgress;
import dev.agentsandbox.policy.config.SandboxConfig;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Sandboxes prepared ahead of runs, {@code warm: N} per agent: each holds a run slot from the
 * moment its preparation starts, serves exactly one run (taken under the pool's lock, so concurrent
 * requests can never both get it), and is discarded instead when the agent's configuration no
 * longer matches what it was prepared with, when it idled past the maximum, or at shutdown.
 *
 * <p>Whether a warm sandbox may serve a run is decided at {@link #take}, against the configuration
 * the run was admitted under: a sandbox prepared with any other image, egress policy, resources,
 * ttl or backend is never handed over, whatever the refill loop has or has not drained yet. {@link
 * #refill} (periodic) drains what no longer matches and prepares what is missing. Thread-safe.
 */
final class WarmPool {
  private static final Logger LOG = LoggerFactory.getLogger(WarmPool.class);

  /** How long an agent whose preparation failed waits before the pool tries again. */
  static final Duration BACKOFF = Duration.ofSeconds(30);

  /** Why a warm sandbox left the pool, as metric labels and log words. */
  enum Outcome {
    /** A run took it. */
    HANDED_OVER,
    /** The agent's configuration changed (or the agent went, or warm went down). */
    DRAINED,
    /** It idled past the maximum. */
    EXPIRED,
    /** The control plane stopped. */
    SHUTDOWN,
    /** Preparing it failed. */
    FAILED;

    String wireName() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  /**
   * Everything a prepared sandbox was built from; a run may take it only when its own key is equal.
   */
  record Key(
      String agent,
      String backend,
      String image,
      RunEgress egress,
      Resources resources,
      Duration ttl,
      boolean requireRuntimeClass) {
    static Key of(RunSpec spec, String backend) {
      return new Key(
          spec.agent(),
          backend,
          spec.image(),
          spec.egress(),
          spec.resources(),
          spec.ttl(),
          spec.requireRuntimeClass());
    }
  }

  /** One prepared sandbox waiting for its run, holding a run slot. */
  record Warm(
      Key key,
      PreparedSandbox sandbox,
      RunSlots.Slot slot,
      Instant preparedAt,
      Instant idleUntil,
      Instant expiresAt) {
    Warm {
      Objects.requireNonNull(key, "key");
      Objects.requireNonNull(sandbox, "sandbox");
      Objects.requireNonNull(slot, "slot");
    }
  }

  /** What one agent's pool holds now. */
  record Counts(int ready, int preparing) {}

  /** Builds the spec a warm sandbox of an agent is prepared from (the admission's own). */
  interface Templates {
    RunSpec template(
        String runId, String agentName, AgentSettings agent, SandboxConfig config, Instant expires);
  }

  private final ConfigSource configs;
  private final dev.agentsandbox.backend.BackendSelector selector;
  private final RunSlots slots;
  private final Templates templates;
  private final ExecutorService executor;
  private final Clock clock;
  private final Duration maxIdle;
  private final ReentrantLock lock = new ReentrantLock();
  private final ReentrantLock refilling = new ReentrantLock();
  // Guarded by lock.
  private final Map<String, Deque<Warm>> ready = new HashMap<>();
  private final Map<String, Integer> preparing = new HashMap<>();
  private final Map<String, Instant> backoffUntil = new HashMap<>();
  private boolean closed;
  private final Map<Outcome, AtomicLong> outcomes = new ConcurrentHashMap<>();

  WarmPool(
      ConfigSource configs,
      dev.agentsandbox.backend.BackendSelector selector,
      RunSlots slots,
      Templates templates,
      ExecutorService executor,
      Clock clock,
      Duration maxIdle) {
    this.configs = configs;
    this.selector = selector;
    this.slots = slots;
    this.templates = templates;
    this.executor = executor;
    this.clock = clock;
    this.maxIdle = maxIdle;
    for (Outcome o : Outcome.values()) {
      outcomes.put(o, new AtomicLong());
    }
  }

  /** Whether the agent has a warm sandbox waiting now (cheap; {@link #take} decides). */
  boolean hasReady(String agent) {
    lock.lock();
    try {
      Deque<Warm> queue = ready.get(agent);
      return queue != null && !queue.isEmpty();
    } finally {
      lock.unlock();
    }
  }

  /**
   * Removes and returns a warm sandbox prepared exactly as {@code key} says and not yet past its
   * idle time; the caller owns it (and its slot) from then on. Any sandbox of the agent prepared
   * under another key or past its idle time is discarded on the way.
   */
  Optional<Warm> take(Key key) {
    Instant now = clock.instant();
    List<Warm> stale = new ArrayList<>();
    Optional<Warm> found = Optional.empty();
    lock.lock();
    try {
      Deque<Warm> queue = ready.get(key.agent());
      if (queue != null) {
        for (Iterator<Warm> it = queue.iterator(); it.hasNext(); ) {
          Warm warm = it.next();
          if (!warm.key().equals(key) || !warm.idleUntil().isAfter(now)) {
            it.remove();
            stale.add(warm);
          } else if (found.isEmpty()) {
            it.remove();
            found = Optional.of(warm);
          }
        }
      }
    } finally {
      lock.unlock();
    }
    for (Warm warm : stale) {
      discard(warm, warm.key().equals(key) ? Outcome.EXPIRED : Outcome.DRAINED);
    }
    found.ifPresent(w -> outcomes.get(Outcome.HANDED_OVER).incrementAndGet());
    return found;
  }

  /**
   * One maintenance pass: reads the configuration, discards every warm sandbox that no longer
   * matches it or idled too long, and starts preparing what each agent is missing, as far as free
   * run slots allow. Passes never overlap; a pass that finds another running returns at once.
   */
  void refill() {
    if (!refilling.tryLock()) {
      return;
    }
    try {
      refillNow();
    } finally {
      refilling.unlock();
    }
  }

  private void refillNow() {
    SandboxConfig config = configs.sandbox();
    Instant now = clock.instant();
    Map<String, Wanted> wanted = wanted(config, now);
    List<Warm> stale = new ArrayList<>();
    List<Runnable> starts = new ArrayList<>();
    lock.lock();
    try {
      if (closed) {
        return;
      }
      for (Map.Entry<String, Deque<Warm>> entry : ready.entrySet()) {
        Wanted want = wanted.get(entry.getKey());
        for (Iterator<Warm> it = entry.getValue().iterator(); it.hasNext(); ) {
          Warm warm = it.next();
          boolean current = want != null && want.key().equals(warm.key());
          boolean expired = !warm.idleUntil().isAfter(now);
          if (!current || expired) {
            it.remove();
            stale.add(warm);
          }
        }
      }
      for (Map.Entry<String, Wanted> entry : wanted.entrySet()) {
        String agent = entry.getKey();
        Wanted want = entry.getValue();
        Instant backoff = backoffUntil.get(agent);
        if (backoff != null && backoff.isAfter(now)) {
          continue;
        }
        int have =
            ready.getOrDefault(agent, new ArrayDeque<>()).size() + preparing.getOrDefault(agent, 0);
        for (int i = have; i < want.count(); i++) {
          Optional<RunSlots.Slot> slot = slots.tryTake();
          if (slot.isEmpty()) {
            break;
          }
          preparing.merge(agent, 1, Integer::sum);
          starts.add(() -> prepare(want, slot.get()));
        }
      }
    } finally {
      lock.unlock();
    }
    for (Warm warm : stale) {
      discard(warm, warm.idleUntil().isAfter(now) ? Outcome.DRAINED : Outcome.EXPIRED);
    }
    for (Runnable start : starts) {
      executor.execute(start);
    }
  }

  /** What the configuration wants of an agent: how many, prepared how, on which backend. */
  private record Wanted(
      int count, Key key, SandboxBackend backend, AgentSettings agent, SandboxConfig config) {}

  private Map<String, Wanted> wanted(SandboxConfig config, Instant now) {
    Map<String, Wanted> wanted = new TreeMap<>();
    if (!config.enabled()) {
      return wanted;
    }
    Selection selection = null;
    for (Map.Entry<String, AgentSettings> entry : config.agents().entrySet()) {
      AgentSettings agent = entry.getValue();
      // An agent that inspects hosts gets no warm sandbox: its proxy's CA and the credentials it
      // injects are made for each run, not before anyone asked.
      if (agent.warm() == 0 || !agent.inspect().isEmpty()) {
        continue;
      }
      if (selection == null) {
        try {
          selection = selector.select(config.backend().wireName(), config.requireRuntimeClass());
        } catch (NoUsableBackendException e) {
          return wanted;
        }
        if (!selection.backend().prepares()) {
          return wanted;
        }
      }
      RunSpec template =
          templates.template(RunIds.next(), entry.getKey(), agent, config, expiresAt(agent, now));
      wanted.put(
          entry.getKey(),
          new Wanted(
              agent.warm(),
              Key.of(template, selection.backend().name()),
              selection.backend(),
              agent,
              config));
    }
    return wanted;
  }

  /**
   * A warm sandbox's objects carry one expiry label from the start: past the idle time plus the
   * run's ttl plus the reaper's grace, so a run that takes it at the last idle moment still ends
   * before the reaper may touch it.
   */
  private Instant expiresAt(AgentSettings agent, Instant now) {
    return now.plus(maxIdle)
        .plus(Duration.ofSeconds(agent.ttlSeconds()))
        .plus(RunAdmission.REAP_GRACE);
  }

  private void prepare(Wanted want, RunSlots.Slot slot) {
    String agentName = want.key().agent();
    Instant now = clock.instant();
    Instant idleUntil = now.plus(maxIdle);
    Warm warm = null;
    try {
      RunSpec template =
          templates.template(
              RunIds.next(), agentName, want.agent(), want.config(), expiresAt(want.agent(), now));
      PreparedSandbox prepared = want.backend().prepare(template, idleUntil);
      // Keyed by what was actually prepared (the instance egress policy is read anew for the
      // template), so a run can only ever take a sandbox whose policy equals its own.
      warm =
          new Warm(
              Key.of(template, want.backend().name()),
              prepared,
              slot,
              now,
              idleUntil,
              template.expiresAt());
    } catch (RuntimeException e) {
      LOG.warn("preparing a warm sandbox for agent {} failed: {}", agentName, e.getMessage());
      outcomes.get(Outcome.FAILED).incrementAndGet();
      slot.release();
      lock.lock();
      try {
        preparing.merge(agentName, -1, Integer::sum);
        backoffUntil.put(agentName, clock.instant().plus(BACKOFF));
      } finally {
        lock.unlock();
      }
      return;
    }
    boolean keep;
    lock.lock();
    try {
      backoffUntil.remove(agentName);
      keep = !closed;
      if (keep) {
        preparing.merge(agentName, -1, Integer::sum);
        ready.computeIfAbsent(agentName, a -> new ArrayDeque<>()).addLast(warm);
      }
    } finally {
      lock.unlock();
    }
    if (!keep) {
      // Still counted as preparing until it is gone: close() waits for it, so the control plane
      // does not stop (and interrupt this thread) halfway through the removal.
      try {
        discardNow(warm, Outcome.SHUTDOWN);
      } finally {
        lock.lock();
        try {
          preparing.merge(agentName, -1, Integer::sum);
        } finally {
          lock.unlock();
        }
      }
    }
  }

  private void discard(Warm warm, Outcome outcome) {
    try {
      executor.execute(() -> discardNow(warm, outcome));
    } catch (RuntimeException e) {
      discardNow(warm, outcome);
    }
  }

  /** Removes the sandbox, then gives its slot back: the slot counts it until it is gone. */
  private void discardNow(Warm warm, Outcome outcome) {
    try {
      warm.sandbox().discard();
    } catch (RuntimeException e) {
      LOG.warn(
          "removing warm sandbox {} of agent {} ({}): {} (the reaper removes what is left)",
          warm.sandbox().runId(),
          warm.key().agent(),
          outcome.wireName(),
          e.getMessage());
    } finally {
      warm.slot().release();
      outcomes.get(outcome).incrementAndGet();
    }
  }

  /** How much longer than the control plane's {@code wait} shutdown waits for preparations. */
  static final Duration PREPARATION_BOUND = Duration.ofSeconds(60);

  /**
   * {@link #close} for the control plane's shutdown, which waits up to {@code wait} for its runs: a
   * preparation in flight cannot be cut short without leaving half a sandbox, so it gets the time a
   * proxy may take to start ({@link #PREPARATION_BOUND}) on top.
   */
  void shutdown(Duration wait) throws InterruptedException {
    close(wait.plus(PREPARATION_BOUND));
  }

  /**
   * Stops preparing and removes every warm sandbox, waiting for those in preparation to finish (and
   * be removed) for up to {@code wait}.
   */
  void close(Duration wait) throws InterruptedException {
    List<Warm> all = new ArrayList<>();
    lock.lock();
    try {
      closed = true;
      ready.values().forEach(all::addAll);
      ready.clear();
    } finally {
      lock.unlock();
    }
    for (Warm warm : all) {
      discardNow(warm, Outcome.SHUTDOWN);
    }
    Instant until = clock.instant().plus(wait);
    while (preparingTotal() > 0 && clock.instant().isBefore(until)) {
      Thread.sleep(50);
    }
  }

  private int preparingTotal() {
    lock.lock();
    try {
      return preparing.values().stream().mapToInt(Integer::intValue).sum();
    } finally {
      lock.unlock();
    }
  }

  /** Per agent, how many warm sandboxes are ready and how many are being prepared. */
  Map<String, Counts> counts() {
    Map<String, Counts> out = new TreeMap<>();
    lock.lock();
    try {
      ready.forEach((agent, queue) -> out.put(agent, new Counts(queue.size(), 0)));
      preparing.forEach(
          (agent, n) ->
              out.merge(agent, new Counts(0, n), (a, b) -> new Counts(a.ready(), b.preparing())));
    } finally {
      lock.unlock();
    }
    return out;
  }

  /** Per agent, {@code {"ready": n, "preparing": m}}. */
  Map<String, Map<String, Integer>> countsByState() {
    Map<String, Map<String, Integer>> out = new TreeMap<>();
    counts()
        .forEach(
            (agent, n) -> out.put(agent, Map.of("ready", n.ready(), "preparing", n.preparing())));
    return out;
  }

  /** How many warm sandboxes left the pool, by outcome, since start. */
  Map<String, Long> outcomes() {
    Map<String, Long> out = new TreeMap<>();
    outcomes.forEach((o, n) -> out.put(o.wireName(), n.get()));
    return out;
  }
}
