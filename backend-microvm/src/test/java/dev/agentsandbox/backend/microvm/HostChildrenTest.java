package dev.agentsandbox.backend.microvm;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The bounds on the backend's host processes, with real processes: the parent-death signal is tied
 * to the thread that started the child, so a child started for a short-lived thread must outlive
 * it; the hard limit ends a child whose control plane lives on; a kill takes the whole chain.
 */
class HostChildrenTest {
  private final List<Process> started = new ArrayList<>();

  @AfterEach
  void stop() throws InterruptedException {
    for (Process process : started) {
      HostChildren.kill(process, Duration.ofSeconds(10));
    }
  }

  private Process start(Duration limit) throws Exception {
    List<String> sleep = new ArrayList<>(List.of("setpriv"));
    sleep.addAll(HostChildren.DIE_WITH_PARENT);
    sleep.addAll(List.of("--", "sleep", "120"));
    Process process = HostChildren.start(new ProcessBuilder(HostChildren.bounded(limit, sleep)));
    started.add(process);
    return process;
  }

  @Test
  void aChildStartedForAThreadThatEndsLivesOn() throws Exception {
    AtomicReference<Process> child = new AtomicReference<>();
    AtomicReference<Exception> failed = new AtomicReference<>();
    Thread shortLived =
        Thread.ofPlatform()
            .start(
                () -> {
                  try {
                    Process started = start(Duration.ofMinutes(2));
                    child.set(started);
                    // Ends only once the whole chain runs (every setpriv has set its signal):
                    // a thread that ended earlier would race with the first setpriv's prctl.
                    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
                    while (!HostChildren.leaf(started).info().command().orElse("").endsWith("sleep")
                        && System.nanoTime() < until) {
                      Thread.sleep(20);
                    }
                  } catch (Exception e) {
                    failed.set(e);
                  }
                });
    shortLived.join(30_000);
    assertThat(failed.get()).isNull();
    // The parent-death signal would have come when the starting thread ended.
    Thread.sleep(1000);
    assertThat(child.get().isAlive())
        .as("the child outlived the thread it was started for")
        .isTrue();
    assertThat(HostChildren.leaf(child.get()).info().command().orElse("")).endsWith("sleep");
  }

  @Test
  void theHardLimitEndsAChildWhoseParentLivesOn() throws Exception {
    Process child = start(Duration.ofSeconds(1));
    assertThat(child.waitFor(20, TimeUnit.SECONDS)).as("ended by its limit").isTrue();
    assertThat(child.exitValue()).as("timeout's status for a command it killed").isEqualTo(137);
  }

  @Test
  void aKillTakesTheWholeChain() throws Exception {
    Process child = start(Duration.ofMinutes(2));
    Thread.sleep(300);
    ProcessHandle leaf = HostChildren.leaf(child);
    assertThat(leaf.pid()).isNotEqualTo(child.pid());
    assertThat(HostChildren.kill(child, Duration.ofSeconds(10))).isTrue();
    assertThat(leaf.isAlive()).isFalse();
  }
}
