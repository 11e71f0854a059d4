package dev.agentsandbox.server.run;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.agentsandbox.backend.Isolation;
import dev.agentsandbox.backend.Manifest;
import dev.agentsandbox.backend.Probe;
import dev.agentsandbox.backend.ReapReport;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.backend.Sandbox;
import dev.agentsandbox.backend.SandboxBackend;
import dev.agentsandbox.backend.SandboxListener;
import dev.agentsandbox.backend.SandboxPlan;
import dev.agentsandbox.policy.config.Scopes;
import dev.agentsandbox.runs.OperatorEgress;
import dev.agentsandbox.runs.RunSettings;
import dev.agentsandbox.server.AgentSandboxServer;
import dev.agentsandbox.server.RunWiring;
import dev.agentsandbox.store.Store;
import dev.agentsandbox.testing.api.ApiClient;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 26: the first plan after serve waited 21 s on the microVM backend's KVM probe. Here the
 * server has a backend whose probe answers only when the test lets it (as a KVM boot that takes 20
 * s) and a fast one: the first plan answers at once with the fast backend and says which probe is
 * still running, {@code GET .../backends} says so too, and once the slow probe answers, {@code
 * auto} picks the stronger backend.
 */
class BackendProbesApiTest {
  private static final String BASE = "/api/admin/platform/agent-sandbox";
  private final Slow microvm =
      new Slow(new Probe("microvm", true, Isolation.MICROVM, "qemu-kvm", "booted under KVM"));
  private final Slow docker =
      new Slow(new Probe("docker", true, Isolation.GVISOR, "runsc", "runsc registered"));
  private Store store;
  private AgentSandboxServer server;
  private ApiClient api;
  private String admin;

  /** A real backend of the SPI that plans, and whose probe answers when the test lets it. */
  private static final class Slow implements SandboxBackend {
    private final Probe answer;
    final CountDownLatch release = new CountDownLatch(1);

    Slow(Probe answer) {
      this.answer = answer;
    }

    @Override
    public String name() {
      return answer.backend();
    }

    @Override
    public Probe probe() {
      try {
        release.await(5, TimeUnit.MINUTES);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      return answer;
    }

    @Override
    public SandboxPlan plan(RunSpec spec) {
      return new SandboxPlan(
          name(),
          answer.runtime(),
          answer.isolation(),
          List.of(new Manifest("sandbox", spec.runId(), Map.of("image", spec.image()))));
    }

    @Override
    public Sandbox launch(RunSpec spec, SandboxListener listener) {
      throw new AssertionError("this test only plans");
    }

    @Override
    public ReapReport reap(Instant now, Predicate<String> isLive) {
      return new ReapReport(List.of(), List.of());
    }
  }

  @BeforeEach
  void start(@TempDir Path dir) throws Exception {
    docker.release.countDown();
    store = Store.open("jdbc:sqlite:" + dir.resolve("probes.db"));
    server =
        AgentSandboxServer.start(
            new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
            store,
            new RunWiring(
                List.of(microvm, docker),
                OperatorEgress.NONE,
                RunSettings.defaults("probes-test"),
                RunWiring.every(Duration.ofHours(1))));
    api = new ApiClient(server.baseUrl(), Duration.ofSeconds(90));
    admin = store.tokens().create("admin", Scopes.ALL, null).secret();
    ApiClient.Answer put =
        api.put(
            BASE,
            admin,
            "{\"enabled\": true, \"backend\": \"auto\", \"agents\": {\"helper\": {\"allow\": []}},"
                + " \"reason\": \"test\"}");
    assertThat(put.status()).as(put.body()).isEqualTo(200);
  }

  @AfterEach
  void stop() {
    microvm.release.countDown();
    server.close();
    store.close();
  }

  @Test
  void theFirstPlanDoesNotWaitOnASlowProbeAndSaysItIsStillRunning() throws Exception {
    long started = System.nanoTime();
    ApiClient.Answer plan =
        api.post(BASE + "/plan", admin, "{\"agent\": \"helper\", \"command\": [\"true\"]}");
    Duration took = Duration.ofNanos(System.nanoTime() - started);
    assertThat(plan.status()).as(plan.body()).isEqualTo(200);
    JsonNode body = plan.json();
    assertThat(body.path("backend").asText()).isEqualTo("docker");
    assertThat(body.path("probes_running").toString()).isEqualTo("[\"microvm\"]");
    assertThat(took).as("the plan waited on the slow probe").isLessThan(Duration.ofSeconds(15));

    JsonNode backends = api.get(BASE + "/backends", admin).json();
    JsonNode slow = backends.path("backends").get(0);
    assertThat(slow.path("backend").asText()).isEqualTo("microvm");
    assertThat(slow.path("available").asBoolean()).isFalse();
    assertThat(slow.path("probe_running").asBoolean()).isTrue();
    assertThat(slow.path("probed_at").isNull()).isTrue();
    assertThat(slow.path("detail").asText()).contains("still running");
    JsonNode fast = backends.path("backends").get(1);
    assertThat(fast.path("available").asBoolean()).isTrue();
    assertThat(fast.path("probed_at").isTextual()).isTrue();

    microvm.release.countDown();
    await("the slow probe's answer")
        .atMost(Duration.ofSeconds(30))
        .pollInterval(Duration.ofMillis(100))
        .until(
            () -> api.get(BASE + "/backends", admin).json(),
            b -> b.path("backends").get(0).path("available").asBoolean());
    JsonNode later =
        api.post(BASE + "/plan", admin, "{\"agent\": \"helper\", \"command\": [\"true\"]}").json();
    assertThat(later.path("backend").asText()).isEqualTo("microvm");
    assertThat(later.path("probes_running")).isEmpty();
  }

  @Test
  void aPlanForANamedBackendWaitsForThatBackendsProbe() throws Exception {
    ApiClient.Answer put =
        api.put(
            BASE,
            admin,
            "{\"version\": 1, \"enabled\": true, \"backend\": \"microvm\", \"agents\":"
                + " {\"helper\": {\"allow\": []}}, \"reason\": \"test\"}");
    assertThat(put.status()).as(put.body()).isEqualTo(200);
    Thread.ofVirtual()
        .start(
            () -> {
              try {
                Thread.sleep(1000);
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
              microvm.release.countDown();
            });
    JsonNode plan =
        api.post(BASE + "/plan", admin, "{\"agent\": \"helper\", \"command\": [\"true\"]}").json();
    assertThat(plan.path("backend").asText()).isEqualTo("microvm");
    assertThat(plan.path("available").asBoolean()).isTrue();
    assertThat(plan.path("probes_running")).isEmpty();
  }
}
