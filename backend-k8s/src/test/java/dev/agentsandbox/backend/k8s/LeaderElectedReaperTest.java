package dev.agentsandbox.backend.k8s;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.fabric8.kubernetes.api.model.coordination.v1.Lease;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;

/** Two control-plane replicas compete for the reaper's Lease on the mock API server. */
@EnableKubernetesMockClient(crud = true)
class LeaderElectedReaperTest {
  private static final LeaderElectedReaper.Timings FAST =
      new LeaderElectedReaper.Timings(
          Duration.ofSeconds(3),
          Duration.ofSeconds(2),
          Duration.ofMillis(200),
          Duration.ofMillis(100));

  static KubernetesClient client;

  @Test
  @SuppressWarnings("try") // closing replica-a inside the block is the point of the test
  void oneReplicaReapsAndTheOtherTakesOverWhenItStops() throws InterruptedException {
    AtomicInteger passesA = new AtomicInteger();
    AtomicInteger passesB = new AtomicInteger();
    try (LeaderElectedReaper a =
            new LeaderElectedReaper(
                client, "agent-sandbox", "replica-a", FAST, passesA::incrementAndGet);
        LeaderElectedReaper b =
            new LeaderElectedReaper(
                client, "agent-sandbox", "replica-b", FAST, passesB::incrementAndGet)) {
      a.start();
      awaitTrue("replica-a leads", a::isLeading);
      b.start();
      awaitTrue("replica-a reaps", () -> passesA.get() >= 2);
      Lease lease =
          client
              .leases()
              .inNamespace("agent-sandbox")
              .withName(LeaderElectedReaper.LEASE_NAME)
              .get();
      assertThat(lease.getSpec().getHolderIdentity()).isEqualTo("replica-a");
      // b has tried to acquire several times by now (every 200 ms) and holds nothing.
      awaitTrue("replica-b has had chances to acquire", () -> passesA.get() >= 5);
      assertThat(b.isLeading()).isFalse();
      assertThat(passesB.get()).isZero();

      a.close();
      assertThat(a.isLeading()).isFalse();
      awaitTrue("replica-b takes over", b::isLeading);
      awaitTrue("replica-b reaps", () -> passesB.get() >= 1);
      int passesAfterStop = passesA.get();
      awaitTrue("replica-b keeps reaping", () -> passesB.get() >= 3);
      assertThat(passesA.get()).isEqualTo(passesAfterStop);
      assertThat(
              client
                  .leases()
                  .inNamespace("agent-sandbox")
                  .withName(LeaderElectedReaper.LEASE_NAME)
                  .get()
                  .getSpec()
                  .getHolderIdentity())
          .isEqualTo("replica-b");
    }
  }

  @Test
  void aReplicaThatLosesTheLeaseJoinsTheElectionAgain() throws InterruptedException {
    AtomicInteger passes = new AtomicInteger();
    try (LeaderElectedReaper a =
        new LeaderElectedReaper(
            client, "agent-sandbox-3", "replica-a", FAST, passes::incrementAndGet)) {
      a.start();
      awaitTrue("replica-a leads", a::isLeading);
      // Another holder takes the Lease (as after a network partition): replica-a cannot renew.
      steal("agent-sandbox-3");
      awaitTrue("replica-a stops leading", () -> !a.isLeading());
      int passesWhileOut = passes.get();
      // The intruder never renews; once its Lease expires, replica-a must take it back.
      awaitTrue("replica-a leads again", a::isLeading);
      awaitTrue("replica-a reaps again", () -> passes.get() > passesWhileOut);
      assertThat(
              client
                  .leases()
                  .inNamespace("agent-sandbox-3")
                  .withName(LeaderElectedReaper.LEASE_NAME)
                  .get()
                  .getSpec()
                  .getHolderIdentity())
          .isEqualTo("replica-a");
    }
  }

  @Test
  void aFailingPassDoesNotStopTheNextOne() throws InterruptedException {
    AtomicInteger attempts = new AtomicInteger();
    try (LeaderElectedReaper reaper =
        new LeaderElectedReaper(
            client,
            "agent-sandbox-2",
            "replica-c",
            FAST,
            () -> {
              attempts.incrementAndGet();
              throw new IllegalStateException("API unavailable");
            })) {
      reaper.start();
      awaitTrue("passes continue after failures", () -> attempts.get() >= 3);
    }
  }

  /** Rewrites the Lease's holder, retrying when the renewing replica wrote in between. */
  private static void steal(String namespace) {
    for (int attempt = 0; ; attempt++) {
      Lease lease =
          client.leases().inNamespace(namespace).withName(LeaderElectedReaper.LEASE_NAME).get();
      lease.getSpec().setHolderIdentity("intruder");
      lease.getSpec().setRenewTime(java.time.ZonedDateTime.now(java.time.ZoneOffset.UTC));
      try {
        client.leases().inNamespace(namespace).resource(lease).update();
        return;
      } catch (io.fabric8.kubernetes.client.KubernetesClientException e) {
        if (e.getCode() != 409 || attempt >= 50) {
          throw e;
        }
      }
    }
  }

  /** Waits for a condition, failing after a generous bound (the bound is not a speed claim). */
  private static void awaitTrue(String what, BooleanSupplier condition) {
    await(what).atMost(Duration.ofSeconds(60)).until(condition::getAsBoolean);
  }
}
