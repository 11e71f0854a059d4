package dev.agentsandbox.store;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;

/**
 * Many writers at once: the audit chain must stay linear and gap-free, and of several admins saving
 * against the same version exactly one must win. Two {@link Store} instances on one database stand
 * for two replicas (or the server and the CLI). Loops are bounded in count; waits in time.
 */
abstract class ConcurrencyContract extends StoreTestBase {

  static final int THREADS = 8;
  static final int APPENDS_PER_THREAD = 40;

  @Test
  void concurrentAppendsFromTwoStoresFormOneLinearChain() throws Exception {
    try (Store replica = Store.open(fixture.url(), clock)) {
      List<Callable<Void>> writers = new ArrayList<>();
      for (int t = 0; t < THREADS; t++) {
        Store target = t % 2 == 0 ? store : replica;
        String actor = "writer-" + t;
        writers.add(
            () -> {
              for (int m = 0; m < APPENDS_PER_THREAD; m++) {
                target
                    .audit()
                    .append(new AuditEvent("agent_sandbox.launch", actor, null, null, null));
              }
              return null;
            });
      }
      runAllAtOnce(writers);
    }

    long total = (long) THREADS * APPENDS_PER_THREAD;
    VerifyResult result = store.audit().verify();
    assertThat(result).isEqualTo(new VerifyResult(true, total, List.of()));
    assertThat(store.audit().head().id()).isEqualTo(total);
    List<Long> ids = new ArrayList<>();
    Long after = 0L;
    while (true) {
      List<AuditRow> page =
          store.audit().query(new AuditQuery(null, null, null, null, after, 1000));
      if (page.isEmpty()) {
        break;
      }
      page.forEach(row -> ids.add(row.id()));
      after = page.get(page.size() - 1).id();
    }
    assertThat(ids).containsExactlyElementsOf(LongStream.rangeClosed(1, total).boxed().toList());
  }

  @Test
  void ofConcurrentSavesAgainstOneVersionExactlyOneWins() throws Exception {
    AtomicInteger conflicts = new AtomicInteger();
    List<Callable<Void>> admins = new ArrayList<>();
    try (Store replica = Store.open(fixture.url(), clock)) {
      for (int t = 0; t < THREADS; t++) {
        Store target = t % 2 == 0 ? store : replica;
        String actor = "admin-" + t;
        admins.add(
            () -> {
              try {
                target
                    .configs()
                    .save(
                        "agent-sandbox",
                        0,
                        json("{\"by\":\"" + actor + "\"}"),
                        new AuditEvent("agent_sandbox.config.update", actor, null, null, null));
              } catch (VersionConflictException e) {
                conflicts.incrementAndGet();
              }
              return null;
            });
      }
      runAllAtOnce(admins);
    }

    assertThat(conflicts.get()).isEqualTo(THREADS - 1);
    StoredConfig winner = store.configs().current("agent-sandbox").orElseThrow();
    assertThat(winner.version()).isEqualTo(1);
    assertThat(store.audit().query(AuditQuery.all(100)))
        .singleElement()
        .satisfies(row -> assertThat(row.actor()).isEqualTo(winner.updatedBy()));
    assertThat(store.audit().verify().ok()).isTrue();
  }

  @Test
  void concurrentTokenCreationUnderOneNameIssuesExactlyOne() throws Exception {
    AtomicInteger taken = new AtomicInteger();
    List<Callable<Void>> creators = new ArrayList<>();
    try (Store replica = Store.open(fixture.url(), clock)) {
      for (int t = 0; t < THREADS; t++) {
        Store target = t % 2 == 0 ? store : replica;
        creators.add(
            () -> {
              try {
                target.tokens().create("ci", java.util.Set.of("agent_sandbox.read"), null);
              } catch (TokenNameTakenException e) {
                taken.incrementAndGet();
              }
              return null;
            });
      }
      runAllAtOnce(creators);
    }

    assertThat(taken.get()).isEqualTo(THREADS - 1);
    assertThat(store.tokens().countActive()).isEqualTo(1);
  }

  /** Starts every task at the same moment and rethrows the first failure. */
  static void runAllAtOnce(List<Callable<Void>> tasks) throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(tasks.size());
    try {
      CountDownLatch start = new CountDownLatch(1);
      List<Future<Void>> futures = new ArrayList<>();
      for (Callable<Void> task : tasks) {
        futures.add(
            pool.submit(
                () -> {
                  start.await();
                  return task.call();
                }));
      }
      start.countDown();
      for (Future<Void> future : futures) {
        future.get(120, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
      assertThat(pool.awaitTermination(30, TimeUnit.SECONDS)).isTrue();
    }
  }
}
