package dev.agentsandbox.backend;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 26: the first plan after serve waited 21 s on the microVM backend's KVM probe. With the
 * probes kept in the background, no request waits on a slow probe of a backend it did not name, and
 * what is still being probed is said.
 */
class ProbeCacheTest {
  /** A real backend of the SPI whose probe answers only when the test lets it. */
  private static final class Held implements SandboxBackend {
    private final Probe answer;
    final CountDownLatch release = new CountDownLatch(1);
    final AtomicInteger probes = new AtomicInteger();

    Held(Probe answer) {
      this.answer = answer;
    }

    @Override
    public String name() {
      return answer.backend();
    }

    @Override
    public Probe probe() {
      probes.incrementAndGet();
      try {
        release.await(5, TimeUnit.MINUTES);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      return answer;
    }

    @Override
    public SandboxPlan plan(RunSpec spec) {
      throw new AssertionError("not planned here");
    }

    @Override
    public Sandbox launch(RunSpec spec, SandboxListener listener) {
      throw new AssertionError("not launched here");
    }

    @Override
    public ReapReport reap(Instant now, Predicate<String> isLive) {
      throw new AssertionError("not reaped here");
    }
  }

  private final Held microvm =
      new Held(new Probe("microvm", true, Isolation.MICROVM, "qemu-kvm", "booted under KVM"));
  private final Held docker =
      new Held(new Probe("docker", true, Isolation.GVISOR, "runsc", "runsc registered"));
  private ProbeCache cache;

  @AfterEach
  void stop() {
    microvm.release.countDown();
    docker.release.countDown();
    if (cache != null) {
      cache.close();
    }
  }

  private ProbeCache started(Duration every, Duration staleAfter) {
    cache = new ProbeCache(List.of(microvm, docker), Clock.systemUTC(), every, staleAfter);
    return cache.start();
  }

  @Test
  void autoDoesNotWaitForASlowProbeAndSaysItIsStillRunning() {
    docker.release.countDown();
    BackendSelector selector = new BackendSelector(started(Duration.ofMinutes(1), Duration.ZERO));
    long started = System.nanoTime();
    BackendSelector.Selection chosen = selector.select(BackendSelector.AUTO, false);
    Duration took = Duration.ofNanos(System.nanoTime() - started);
    assertThat(chosen.backend()).isSameAs(docker);
    assertThat(chosen.stillProbing()).containsExactly("microvm");
    assertThat(took).as("auto waited on the slow probe").isLessThan(Duration.ofSeconds(10));
    ProbeCache.Status status = cache.status(microvm);
    assertThat(status.pending()).isTrue();
    assertThat(status.running()).isTrue();
    assertThat(status.probe(Instant.now()).available()).isFalse();
    assertThat(status.probe(Instant.now()).detail()).contains("still running");
  }

  @Test
  void onceTheSlowProbeAnswersAutoPicksTheStrongerBackend() throws Exception {
    docker.release.countDown();
    microvm.release.countDown();
    BackendSelector selector = new BackendSelector(started(Duration.ofMinutes(1), Duration.ZERO));
    assertThat(cache.current(microvm, Duration.ofSeconds(30)).available()).isTrue();
    BackendSelector.Selection chosen = selector.select(BackendSelector.AUTO, false);
    assertThat(chosen.backend()).isSameAs(microvm);
    assertThat(chosen.stillProbing()).isEmpty();
  }

  @Test
  void aRequestThatNamesTheSlowBackendWaitsForItsProbe() throws Exception {
    docker.release.countDown();
    BackendSelector selector = new BackendSelector(started(Duration.ofMinutes(1), Duration.ZERO));
    Thread.ofVirtual()
        .start(
            () -> {
              try {
                Thread.sleep(500);
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
              microvm.release.countDown();
            });
    BackendSelector.Selection chosen = selector.select("microvm", false);
    assertThat(chosen.backend()).isSameAs(microvm);
    assertThat(chosen.probe().available()).isTrue();
  }

  @Test
  void whenNothingHasAnsweredAutoRefusesNamingTheProbesStillRunning() {
    BackendSelector selector = new BackendSelector(started(Duration.ofMinutes(1), Duration.ZERO));
    org.assertj.core.api.Assertions.assertThatThrownBy(
            () -> selector.select(BackendSelector.AUTO, false))
        .isInstanceOfSatisfying(
            NoUsableBackendException.class,
            e ->
                assertThat(e.attempts())
                    .anySatisfy(
                        a -> assertThat(a).startsWith("microvm: ").contains("still running"))
                    .anySatisfy(
                        a -> assertThat(a).startsWith("docker: ").contains("still running")));
  }

  @Test
  void anAnswerIsKeptAndProbedAgainOnItsScheduleOrWhenStale() throws Exception {
    docker.release.countDown();
    microvm.release.countDown();
    started(Duration.ofHours(1), Duration.ofSeconds(5));
    cache.current(docker, Duration.ofSeconds(30));
    int first = docker.probes.get();
    assertThat(first).isEqualTo(1);
    // Read within the time the answer is fresh: kept, no new probe.
    cache.status(docker);
    Thread.sleep(100);
    assertThat(docker.probes.get()).isEqualTo(1);
    // Read when stale: answered at once, and probed again in the background.
    Thread.sleep(5500);
    assertThat(cache.status(docker).last()).isPresent();
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (docker.probes.get() < 2 && System.nanoTime() < until) {
      Thread.sleep(20);
    }
    assertThat(docker.probes.get()).isEqualTo(2);
  }
}
