package dev.agentsandbox.backend.docker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.agentsandbox.backend.UnableToLaunchSandboxException;
import dev.agentsandbox.policy.net.Cidr;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class SubnetAllocatorTest {
  private final List<Cidr> daemon = new CopyOnWriteArrayList<>();

  private SubnetAllocator allocator(String range) {
    return new SubnetAllocator(
        SubnetPool.parse(range),
        () ->
            daemon.stream()
                .map(c -> new AutomaticSubnets.DaemonNetwork(c, java.util.Map.of()))
                .toList(),
        Clock.systemUTC());
  }

  @Test
  void aPoolIsAPrivateIpv4RangeOfAtLeastTwoBlocksWrittenAsItsFirstAddress() {
    SubnetPool pool = SubnetPool.parse("10.213.0.0/16");
    assertThat(pool.blocks()).isEqualTo(4096);
    assertThat(pool.subnet(0)).isEqualTo("10.213.0.0/28");
    assertThat(pool.gateway(0)).isEqualTo("10.213.0.1");
    assertThat(pool.subnet(4095)).isEqualTo("10.213.255.240/28");
    assertThat(SubnetPool.parse("192.168.77.0/27").blocks()).isEqualTo(2);
    assertThat(SubnetPool.parse("100.64.0.0/10").blocks()).isEqualTo(1 << 18);
    assertThatThrownBy(() -> SubnetPool.parse("10.213.0.1/16"))
        .hasMessageContaining("host bits are set");
    assertThatThrownBy(() -> SubnetPool.parse("8.8.0.0/16"))
        .hasMessageContaining("not private address space");
    assertThatThrownBy(() -> SubnetPool.parse("10.0.0.0/7"))
        .as("wider than the private range it starts in")
        .hasMessageContaining("not private address space");
    assertThatThrownBy(() -> SubnetPool.parse("fd00::/64")).hasMessageContaining("IPv6");
    assertThatThrownBy(() -> SubnetPool.parse("10.213.0.0/28")).hasMessageContaining("too small");
    assertThatThrownBy(() -> SubnetPool.parse("10.213.0.0")).hasMessageContaining("no prefix");
    assertThatThrownBy(() -> SubnetPool.parse(" ")).hasMessageContaining("empty");
    assertThatThrownBy(() -> SubnetPool.parse("banana/16"))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void blocksAreHandedOutOnceAndFreeAgainWhenReleased() {
    SubnetAllocator allocator = allocator("192.168.77.0/26");
    List<SubnetAllocator.Block> first = allocator.allocate(2, "r1");
    List<SubnetAllocator.Block> second = allocator.allocate(2, "r2");
    assertThat(first)
        .extracting(SubnetAllocator.Block::subnet)
        .containsExactly("192.168.77.0/28", "192.168.77.16/28");
    assertThat(second)
        .extracting(SubnetAllocator.Block::subnet)
        .containsExactly("192.168.77.32/28", "192.168.77.48/28");
    assertThat(allocator.held()).isEqualTo(4);
    assertThatThrownBy(() -> allocator.allocate(2, "r3"))
        .isInstanceOf(UnableToLaunchSandboxException.class)
        .hasMessageContaining("run r3")
        .hasMessageContaining("192.168.77.0/26 has no 2 free /28 blocks")
        .hasMessageContaining("4 held by live runs");
    first.forEach(allocator::release);
    assertThat(allocator.allocate(2, "r3"))
        .extracting(SubnetAllocator.Block::subnet)
        .containsExactlyInAnyOrder("192.168.77.0/28", "192.168.77.16/28");
  }

  @Test
  void anExhaustedPoolRefusesAtOnceAndHoldsNothingForTheRefusedRun() {
    SubnetAllocator allocator = allocator("192.168.77.0/27");
    allocator.allocate(1, "r1");
    assertThatThrownBy(() -> allocator.allocate(2, "r2"))
        .isInstanceOf(UnableToLaunchSandboxException.class)
        .hasMessageContaining("--docker-subnet-pool");
    assertThat(allocator.held()).as("the refused run took no block").isEqualTo(1);
    assertThat(allocator.allocate(1, "r3")).hasSize(1);
  }

  @Test
  void subnetsTheDaemonHasAreNeverHandedOutEvenFromAnEarlierControlPlane() {
    // Networks a crashed control plane left behind: one /28 of the pool and a /24 across it.
    daemon.add(Cidr.parse("192.168.77.16/28"));
    daemon.add(Cidr.parse("192.168.77.64/26"));
    daemon.add(Cidr.parse("172.17.0.0/16"));
    daemon.add(Cidr.parse("fd00::/64"));
    SubnetAllocator allocator = allocator("192.168.77.0/24");
    Set<String> handed = new HashSet<>();
    for (int i = 0; i < 11; i++) {
      allocator.allocate(1, "r" + i).forEach(b -> handed.add(b.subnet()));
    }
    assertThat(handed)
        .hasSize(11)
        .doesNotContain("192.168.77.16/28")
        .noneMatch(s -> s.startsWith("192.168.77.64/") || s.startsWith("192.168.77.80/"))
        .noneMatch(s -> s.startsWith("192.168.77.96/") || s.startsWith("192.168.77.112/"));
    assertThatThrownBy(() -> allocator.allocate(1, "r11"))
        .hasMessageContaining("5 overlapped by the daemon's other networks");
    // The reaper removed the leftovers: their blocks are free again.
    daemon.clear();
    assertThat(allocator.allocate(5, "r12")).hasSize(5);
  }

  @Test
  void aBlockTheDaemonRefusedStaysAsideForAWhileThenComesBack() {
    Instant[] now = {Instant.parse("2026-12-01T00:00:00Z")};
    Clock clock =
        new Clock() {
          @Override
          public ZoneOffset getZone() {
            return ZoneOffset.UTC;
          }

          @Override
          public Clock withZone(java.time.ZoneId zone) {
            return this;
          }

          @Override
          public Instant instant() {
            return now[0];
          }
        };
    SubnetAllocator allocator =
        new SubnetAllocator(SubnetPool.parse("192.168.77.0/27"), List::of, clock);
    List<SubnetAllocator.Block> taken = allocator.allocate(2, "r1");
    allocator.refused(taken.get(0));
    assertThat(allocator.held()).isEqualTo(1);
    assertThatThrownBy(() -> allocator.allocate(1, "r2")).hasMessageContaining("1 refused");
    now[0] = now[0].plus(SubnetAllocator.REFUSED_FOR).plus(Duration.ofSeconds(1));
    assertThat(allocator.allocate(1, "r2").get(0).subnet()).isEqualTo(taken.get(0).subnet());
  }

  @Test
  void concurrentRunsNeverShareABlockAndAllBlocksComeBack() throws Exception {
    SubnetAllocator allocator = allocator("10.213.0.0/22"); // 64 blocks, 32 runs at most
    int threads = 16;
    int rounds = 2000;
    Set<String> live = Collections.synchronizedSet(new HashSet<>());
    List<String> clashes = new CopyOnWriteArrayList<>();
    List<String> refusals = new CopyOnWriteArrayList<>();
    CountDownLatch go = new CountDownLatch(1);
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      List<Future<?>> done = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        int thread = t;
        done.add(
            pool.submit(
                () -> {
                  go.await();
                  for (int r = 0; r < rounds; r++) {
                    List<SubnetAllocator.Block> blocks;
                    try {
                      blocks = allocator.allocate(2, "t" + thread + "r" + r);
                    } catch (UnableToLaunchSandboxException e) {
                      refusals.add(e.getMessage());
                      continue;
                    }
                    for (SubnetAllocator.Block b : blocks) {
                      if (!live.add(b.subnet())) {
                        clashes.add(b.subnet());
                      }
                    }
                    Thread.onSpinWait();
                    for (SubnetAllocator.Block b : blocks) {
                      live.remove(b.subnet());
                      allocator.release(b);
                    }
                  }
                  return null;
                }));
      }
      go.countDown();
      for (Future<?> f : done) {
        f.get(60, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
    assertThat(clashes).as("a block held by two runs at once").isEmpty();
    assertThat(refusals).as("16 threads holding 2 blocks each fit in 64").isEmpty();
    assertThat(allocator.held()).isZero();
  }
}
