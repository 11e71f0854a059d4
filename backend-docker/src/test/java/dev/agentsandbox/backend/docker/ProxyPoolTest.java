package dev.agentsandbox.backend.docker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/**
 * The proxy pool's bookkeeping, on plain in-memory standbys (the Docker side is {@code
 * ProxyPoolIT}'s): one standby per taker under concurrent takes, what the reaper may remove,
 * expiry, failed creations, close.
 */
class ProxyPoolTest {
  private static final Duration MAX_IDLE = Duration.ofMinutes(10);

  private final MovableClock clock = new MovableClock(Instant.parse("2026-01-01T00:00:00Z"));
  private final List<Entry> made = new ArrayList<>();

  private ProxyPool<Entry> pool(int size) {
    return new ProxyPool<>(
        size,
        MAX_IDLE,
        clock,
        id -> {
          Entry entry = new Entry(id, clock.instant());
          synchronized (made) {
            made.add(entry);
          }
          return entry;
        });
  }

  @Test
  void aStandbyIsNeverHandedToTwoRunsUnderConcurrentTakes() throws Exception {
    ProxyPool<Entry> pool = pool(4);
    for (int i = 0; i < 4; i++) {
      assertThat(pool.fillOnce()).isTrue();
    }
    assertThat(pool.readyIds()).hasSize(4);
    int takers = 24;
    ExecutorService threads = Executors.newFixedThreadPool(takers);
    CountDownLatch go = new CountDownLatch(1);
    List<Future<Optional<Entry>>> results = new ArrayList<>();
    try {
      for (int i = 0; i < takers; i++) {
        String run = "run" + i;
        results.add(
            threads.submit(
                () -> {
                  go.await();
                  return pool.take(run);
                }));
      }
      go.countDown();
      List<String> got = new ArrayList<>();
      for (Future<Optional<Entry>> result : results) {
        result.get(30, TimeUnit.SECONDS).ifPresent(e -> got.add(e.id()));
      }
      assertThat(got).hasSize(4).doesNotHaveDuplicates();
      assertThat(pool.readyIds()).isEmpty();
      assertThat(pool.counts()).containsEntry("taken", 4L).containsEntry("ready", 0L);
    } finally {
      threads.shutdownNow();
    }
  }

  @Test
  void theReaperSparesPooledStandbysAndThoseOfLiveRunsOnly() {
    ProxyPool<Entry> pool = pool(2);
    pool.fillOnce();
    pool.fillOnce();
    String first = pool.readyIds().get(0);
    String second = pool.readyIds().get(1);
    Set<String> liveRuns = ConcurrentHashMap.newKeySet();
    assertThat(pool.isLive(first, liveRuns::contains)).as("pooled").isTrue();

    liveRuns.add("runa");
    assertThat(pool.take("runa").orElseThrow().id()).isEqualTo(first);
    assertThat(pool.isLive(first, liveRuns::contains)).as("taken by a live run").isTrue();
    liveRuns.remove("runa");
    assertThat(pool.isLive(first, liveRuns::contains)).as("its run ended").isFalse();
    pool.forgetEnded(liveRuns::contains);
    liveRuns.add("runa");
    assertThat(pool.isLive(first, liveRuns::contains)).as("forgotten once its run ended").isFalse();

    assertThat(pool.take("runb").orElseThrow().id()).isEqualTo(second);
    liveRuns.add("runb");
    pool.released(second);
    assertThat(pool.isLive(second, liveRuns::contains)).as("released at teardown").isFalse();

    assertThat(pool.isLive(ProxyPool.newId(), id -> true))
        .as("a standby this pool never had (a crashed control plane's)")
        .isFalse();
    assertThat(ProxyPool.isStandbyId(ProxyPool.newId())).isTrue();
    assertThat(ProxyPool.isStandbyId("sbabcdefghijklmnopqrs")).as("a run id").isFalse();
  }

  @Test
  void standbysPastTheMaximumIdleTimeAreDestroyedNotHandedOut() {
    ProxyPool<Entry> pool = pool(1);
    pool.fillOnce();
    Entry old = made.get(0);
    clock.advance(MAX_IDLE);
    assertThat(pool.take("runa")).isEmpty();
    assertThat(old.destroyed).isTrue();
    assertThat(pool.counts()).containsEntry("expired", 1L).containsEntry("taken", 0L);

    pool.fillOnce();
    assertThat(pool.readyIds()).hasSize(1);
    clock.advance(MAX_IDLE);
    pool.fillOnce();
    assertThat(made.get(1).destroyed).as("expired in upkeep").isTrue();
    assertThat(pool.readyIds()).as("replaced").hasSize(1).doesNotContain(made.get(1).id());
    assertThat(pool.counts()).containsEntry("expired", 2L).containsEntry("created", 3L);
  }

  @Test
  void aStandbyNoLongerUsableIsDestroyedNotHandedOut() {
    ProxyPool<Entry> pool = pool(1);
    pool.fillOnce();
    made.get(0).usable.set(false);
    assertThat(pool.take("runa")).isEmpty();
    assertThat(made.get(0).destroyed).isTrue();
  }

  @Test
  void aFailedCreationIsCountedAndLeavesNothingTheReaperWouldSpare() {
    List<String> tried = new ArrayList<>();
    ProxyPool<Entry> pool =
        new ProxyPool<>(
            1,
            MAX_IDLE,
            clock,
            id -> {
              tried.add(id);
              throw new IllegalStateException("daemon says no");
            });
    assertThat(pool.fillOnce()).isFalse();
    assertThat(pool.fillOnce()).isFalse();
    assertThat(pool.counts()).containsEntry("failed", 2L).containsEntry("ready", 0L);
    assertThat(pool.isLive(tried.get(0), id -> true)).isFalse();
    assertThat(pool.take("runa")).isEmpty();
  }

  @Test
  void aFullPoolCreatesNoMore() {
    ProxyPool<Entry> pool = pool(2);
    for (int i = 0; i < 5; i++) {
      pool.fillOnce();
    }
    assertThat(made).hasSize(2);
    pool.take("runa");
    pool.fillOnce();
    assertThat(made).as("refilled after a take").hasSize(3);
  }

  @Test
  void closeDestroysEveryReadyStandbyButNotTakenOnes() {
    ProxyPool<Entry> pool = pool(3);
    for (int i = 0; i < 3; i++) {
      pool.fillOnce();
    }
    Entry taken = pool.take("runa").orElseThrow();
    pool.close(Duration.ofSeconds(5));
    assertThat(made).filteredOn(e -> e != taken).allMatch(e -> e.destroyed);
    assertThat(taken.destroyed).isFalse();
    assertThat(pool.readyIds()).isEmpty();
    pool.fillOnce();
    assertThat(made).as("nothing created after close").hasSize(3);
  }

  @Test
  void theBackgroundThreadFillsThePoolAndStopsAtClose() throws Exception {
    ProxyPool<Entry> pool = pool(2);
    pool.start();
    try {
      for (int i = 0; i < 100 && pool.readyIds().size() < 2; i++) {
        Thread.sleep(50);
      }
      assertThat(pool.readyIds()).hasSize(2);
      pool.take("runa");
      for (int i = 0; i < 100 && pool.readyIds().size() < 2; i++) {
        Thread.sleep(50);
      }
      assertThat(pool.readyIds()).as("refilled").hasSize(2);
    } finally {
      pool.close(Duration.ofSeconds(10));
    }
    assertThat(made).hasSize(3);
    assertThat(made.subList(1, 3)).allMatch(e -> e.destroyed);
  }

  @Test
  void negativeAndAbsurdSizesAreRefused() {
    assertThatThrownBy(() -> pool(-1)).hasMessageContaining("0 (off) to 32: -1");
    assertThatThrownBy(() -> pool(ProxyPool.MAX_SIZE + 1)).hasMessageContaining("33");
    assertThatThrownBy(() -> DockerBackendConfig.defaults().toBuilder().proxyPoolSize(-2).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("proxy pool");
    assertThatThrownBy(() -> DockerBackendConfig.defaults().toBuilder().proxyPoolSize(1000).build())
        .isInstanceOf(IllegalArgumentException.class);
    assertThat(DockerBackendConfig.defaults().toBuilder().proxyPoolSize(3).build().proxyPoolSize())
        .hasValue(3);
    assertThat(DockerBackendConfig.defaults().proxyPoolSize())
        .as("the library's default: no pool (serve asks for an automatic one)")
        .hasValue(0);
  }

  private static final class Entry implements ProxyPool.Standby {
    private final String id;
    private final Instant createdAt;
    final AtomicBoolean usable = new AtomicBoolean(true);
    volatile boolean destroyed;

    Entry(String id, Instant createdAt) {
      this.id = id;
      this.createdAt = createdAt;
    }

    @Override
    public String id() {
      return id;
    }

    @Override
    public Instant createdAt() {
      return createdAt;
    }

    @Override
    public boolean usable() {
      return usable.get() && !destroyed;
    }

    @Override
    public void destroy() {
      destroyed = true;
    }
  }

  private static final class MovableClock extends Clock {
    private volatile Instant now;

    MovableClock(Instant now) {
      this.now = now;
    }

    void advance(Duration by) {
      now = now.plus(by);
    }

    @Override
    public ZoneId getZone() {
      return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(ZoneId zone) {
      return this;
    }

    @Override
    public Instant instant() {
      return now;
    }
  }
}
