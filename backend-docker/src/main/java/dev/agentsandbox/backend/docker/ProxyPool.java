package dev.agentsandbox.backend.docker;

import java.security.SecureRandom;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Docker backend's pool of started proxies for cold runs: up to {@code size} {@link Standby
 * standbys} kept ready, created one at a time by a background thread, each taken by at most one run
 * ({@link #take}, under a lock) and never given back; a standby idle longer than {@code maxIdle} is
 * destroyed and replaced. The bookkeeping the reaper relies on: {@link #isLive} says whether a
 * standby id must be spared. See docs/backends/docker.md, "Proxy pool".
 *
 * @param <S> the standby type
 */
final class ProxyPool<S extends ProxyPool.Standby> implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ProxyPool.class);

  /** Every standby id starts with this; no run id can (run ids hold letters and digits only). */
  static final String ID_PREFIX = "sb-";

  /** The most standbys a pool may keep: each is a running JVM and two networks. */
  static final int MAX_SIZE = 32;

  /** How long a failed creation waits before the next, at first; doubles up to the maximum. */
  static final Duration FIRST_BACKOFF = Duration.ofSeconds(1);

  static final Duration MAX_BACKOFF = Duration.ofSeconds(60);

  private static final char[] ALPHABET = "abcdefghijklmnopqrstuvwxyz234567".toCharArray();
  private static final SecureRandom RANDOM = new SecureRandom();

  /** One pooled entry. */
  interface Standby {
    String id();

    Instant createdAt();

    /** Whether it can still serve a run (its proxy runs and holds no policy). */
    boolean usable();

    /** Removes everything it created; for a standby no run took. */
    void destroy();
  }

  private final PoolSize size;
  private final Duration maxIdle;
  private final Clock clock;
  private final Function<String, S> create;
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition changed = lock.newCondition();
  private final Deque<S> ready = new ArrayDeque<>();
  private final Set<String> creating = new HashSet<>();
  private final Map<String, String> takenBy = new HashMap<>();
  private final AtomicLong created = new AtomicLong();
  private final AtomicLong taken = new AtomicLong();
  private final AtomicLong failed = new AtomicLong();
  private final AtomicLong expired = new AtomicLong();
  private boolean closed;
  private Thread worker;

  /**
   * @param create creates (and starts) one standby under the given id, or throws; called on the
   *     pool's own thread, one at a time
   */
  ProxyPool(int size, Duration maxIdle, Clock clock, Function<String, S> create) {
    this(PoolSize.fixed(size), maxIdle, clock, create);
  }

  ProxyPool(PoolSize size, Duration maxIdle, Clock clock, Function<String, S> create) {
    this.size = size;
    this.maxIdle = maxIdle;
    this.clock = clock;
    this.create = create;
  }

  /** A new standby id: the prefix and 16 random base32 characters. */
  static String newId() {
    char[] id = new char[16];
    for (int i = 0; i < id.length; i++) {
      id[i] = ALPHABET[RANDOM.nextInt(ALPHABET.length)];
    }
    return ID_PREFIX + new String(id);
  }

  /** Whether {@code id} names a standby (whoever's pool it was), not a run. */
  static boolean isStandbyId(String id) {
    return id.startsWith(ID_PREFIX);
  }

  /** The pool's size; 0 while an automatic size is not known yet. */
  int size() {
    return size.current();
  }

  /** How the size is known: given, or learnt ({@link PoolSize#resolve()} learns it now). */
  PoolSize sizing() {
    return size;
  }

  /** Starts the background thread that fills the pool; nothing when the size is 0. */
  void start() {
    lock.lock();
    try {
      if ((size.known() && size.current() == 0) || worker != null || closed) {
        return;
      }
      worker =
          Thread.ofPlatform()
              .name("agent-sandbox-proxy-pool")
              .daemon()
              .start(this::fillUntilClosed);
    } finally {
      lock.unlock();
    }
  }

  /**
   * Takes a ready standby for {@code runId}, or empty when none is ready; never waits for one. A
   * taken standby leaves the pool under the lock, so no two callers ever get the same one. Standbys
   * past their maximum idle time or no longer usable are destroyed, not handed out.
   */
  Optional<S> take(String runId) {
    List<S> discard = new ArrayList<>();
    S found = null;
    lock.lock();
    try {
      Instant now = clock.instant();
      while (!ready.isEmpty() && found == null) {
        S next = ready.pollFirst();
        if (tooOld(next, now) || !next.usable()) {
          discard.add(next);
        } else {
          found = next;
          takenBy.put(next.id(), runId);
          taken.incrementAndGet();
        }
      }
      changed.signalAll();
    } finally {
      lock.unlock();
    }
    discard(discard);
    return Optional.ofNullable(found);
  }

  /** The run that took the standby has been torn down: its objects are gone or the reaper's. */
  void released(String standbyId) {
    lock.lock();
    try {
      takenBy.remove(standbyId);
    } finally {
      lock.unlock();
    }
  }

  /**
   * Whether the reaper must spare the objects of standby {@code id}: while it is in the pool or
   * being created, and while the run that took it is live by {@code runIsLive}. A standby this pool
   * does not know (a previous life's, whose control plane crashed) is not live.
   */
  boolean isLive(String id, Predicate<String> runIsLive) {
    String runId;
    lock.lock();
    try {
      if (creating.contains(id) || ready.stream().anyMatch(s -> s.id().equals(id))) {
        return true;
      }
      runId = takenBy.get(id);
    } finally {
      lock.unlock();
    }
    return runId != null && runIsLive.test(runId);
  }

  /** Forgets taken standbys whose run is no longer live (their objects are the reaper's). */
  void forgetEnded(Predicate<String> runIsLive) {
    Map<String, String> copy;
    lock.lock();
    try {
      copy = new HashMap<>(takenBy);
    } finally {
      lock.unlock();
    }
    copy.forEach(
        (standby, run) -> {
          if (!runIsLive.test(run)) {
            released(standby);
          }
        });
  }

  /** The ids of the standbys ready now, oldest first. */
  List<String> readyIds() {
    lock.lock();
    try {
      return ready.stream().map(Standby::id).toList();
    } finally {
      lock.unlock();
    }
  }

  /**
   * Counts for {@code /metrics}: {@code ready} now, and since start {@code created}, {@code taken},
   * {@code failed} (creations that failed) and {@code expired} (destroyed unused: past the maximum
   * idle time, or no longer usable).
   */
  Map<String, Long> counts() {
    Map<String, Long> counts = new LinkedHashMap<>();
    counts.put("ready", (long) readyIds().size());
    counts.put("created", created.get());
    counts.put("taken", taken.get());
    counts.put("failed", failed.get());
    counts.put("expired", expired.get());
    return counts;
  }

  private boolean tooOld(S standby, Instant now) {
    return !standby.createdAt().plus(maxIdle).isAfter(now);
  }

  /**
   * One upkeep step, on the pool's thread: destroys the expired and unusable standbys, then creates
   * one standby if the pool is short of {@code size}. Returns false when a creation failed.
   */
  boolean fillOnce() {
    List<S> discard = new ArrayList<>();
    String id;
    lock.lock();
    try {
      Instant now = clock.instant();
      ready.removeIf(
          s -> {
            if (tooOld(s, now) || !s.usable()) {
              discard.add(s);
              return true;
            }
            return false;
          });
      if (closed || ready.size() + creating.size() >= size.current()) {
        id = null;
      } else {
        id = newId();
        creating.add(id);
      }
    } finally {
      lock.unlock();
    }
    discard(discard);
    if (id == null) {
      return true;
    }
    S standby;
    try {
      standby = create.apply(id);
    } catch (RuntimeException e) {
      failed.incrementAndGet();
      LOG.warn("proxy pool: creating standby {} failed: {}", id, e.getMessage());
      lock.lock();
      try {
        creating.remove(id);
      } finally {
        lock.unlock();
      }
      return false;
    }
    created.incrementAndGet();
    boolean keep;
    lock.lock();
    try {
      creating.remove(id);
      keep = !closed;
      if (keep) {
        ready.addLast(standby);
        changed.signalAll();
      }
    } finally {
      lock.unlock();
    }
    if (!keep) {
      destroyQuietly(standby);
    }
    return true;
  }

  private void discard(List<S> standbys) {
    for (S standby : standbys) {
      expired.incrementAndGet();
      destroyQuietly(standby);
    }
  }

  private static void destroyQuietly(Standby standby) {
    try {
      standby.destroy();
    } catch (RuntimeException e) {
      LOG.warn(
          "proxy pool: removing standby {}: {} (the reaper removes the rest)",
          standby.id(),
          e.getMessage());
    }
  }

  private void fillUntilClosed() {
    Duration backoff = FIRST_BACKOFF;
    while (true) {
      boolean ok;
      try {
        if (size.resolve() == 0) {
          return;
        }
        ok = fillOnce();
      } catch (RuntimeException e) {
        // Counted as a failed creation when it was one (fillOnce); logged and retried either way.
        LOG.warn("proxy pool: upkeep failed: {}", e.getMessage());
        ok = false;
      }
      lock.lock();
      try {
        if (closed) {
          return;
        }
        if (!ok) {
          changed.await(backoff.toMillis(), TimeUnit.MILLISECONDS);
          backoff = java.util.Collections.min(List.of(backoff.multipliedBy(2), MAX_BACKOFF));
        } else {
          backoff = FIRST_BACKOFF;
          if (ready.size() + creating.size() >= size.current()) {
            // Woken by a take; else once a second, to expire old standbys.
            changed.await(1, TimeUnit.SECONDS);
          }
        }
      } catch (InterruptedException e) {
        return;
      } finally {
        lock.unlock();
      }
    }
  }

  /**
   * Stops filling, waits (bounded by {@code wait}) for a creation in progress, and destroys every
   * standby still in the pool. Taken standbys belong to their runs and are left alone.
   */
  void close(Duration wait) {
    Thread running;
    List<S> discard;
    lock.lock();
    try {
      closed = true;
      running = worker;
      changed.signalAll();
    } finally {
      lock.unlock();
    }
    if (running != null) {
      try {
        running.join(wait.toMillis());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    lock.lock();
    try {
      discard = new ArrayList<>(ready);
      ready.clear();
    } finally {
      lock.unlock();
    }
    discard.forEach(ProxyPool::destroyQuietly);
  }

  @Override
  public void close() {
    close(Duration.ofSeconds(60));
  }
}
