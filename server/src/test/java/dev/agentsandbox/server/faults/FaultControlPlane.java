package dev.agentsandbox.server.faults;

import static org.assertj.core.api.Assertions.fail;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.github.dockerjava.api.DockerClient;
import dev.agentsandbox.backend.Labels;
import dev.agentsandbox.backend.Probe;
import dev.agentsandbox.backend.docker.DockerBackend;
import dev.agentsandbox.backend.docker.DockerBackendConfig;
import dev.agentsandbox.policy.config.Scopes;
import dev.agentsandbox.runs.OperatorEgress;
import dev.agentsandbox.runs.RunSettings;
import dev.agentsandbox.server.AgentSandboxServer;
import dev.agentsandbox.server.RunWiring;
import dev.agentsandbox.store.Store;
import dev.agentsandbox.testing.api.ApiClient;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The set-up the Docker fault tests share: a Docker daemon of the test's own ({@link
 * PrivateDockerd}, with the workload and proxy images), a real server on loopback on a real SQLite
 * store with the real Docker backend on that daemon, an admin token, and agent {@code loop}
 * configured on it. Every admin-API exchange goes through the contract-checked {@link ApiClient}.
 * Closing it closes the server and the store, removes whatever the runs it started left (starting
 * the daemon again first if the test left it stopped), and then closes the daemon.
 */
final class FaultControlPlane implements AutoCloseable {
  static final String BASE = "/api/admin/platform/agent-sandbox";
  static final String IMAGE = "agent-sandbox/workload:dev";
  private static final ObjectMapper JSON = new ObjectMapper();

  /** Loops for longer than any fault test waits, printing as it goes. */
  private static final String LOOP =
      "i=0; while [ $i -lt 280 ]; do echo tick $i; i=$((i+1)); sleep 1; done";

  final PrivateDockerd dockerd;
  final DockerClient docker;
  private final List<String> runs = new ArrayList<>();
  private Store store;
  private AgentSandboxServer server;
  private ApiClient client;
  private String admin;

  private FaultControlPlane(PrivateDockerd dockerd) {
    this.dockerd = dockerd;
    this.docker = dockerd.client();
  }

  /**
   * Starts it for {@code test}: the reaper runs {@code reaperEvery}, each request gives up after
   * {@code requestTimeout}.
   */
  static FaultControlPlane start(String test, Duration reaperEvery, Duration requestTimeout)
      throws Exception {
    FaultControlPlane plane =
        new FaultControlPlane(
            PrivateDockerd.start(test, List.of(IMAGE, DockerBackendConfig.DEFAULT_PROXY_IMAGE)));
    try {
      plane.open(test, reaperEvery, requestTimeout);
      return plane;
    } catch (Throwable e) {
      try {
        plane.close();
      } catch (RuntimeException closing) {
        e.addSuppressed(closing);
      }
      throw e;
    }
  }

  private void open(String test, Duration reaperEvery, Duration requestTimeout) throws Exception {
    Probe probe = new DockerBackend(docker, DockerBackendConfig.defaults()).probe();
    if (!probe.available()) {
      fail(test + " needs a Docker daemon: " + probe.detail());
    }
    String name = test.toLowerCase(Locale.ROOT);
    Path data = Files.createTempDirectory("asb-" + name);
    store = Store.open("jdbc:sqlite:" + data.resolve("it.db"));
    server =
        AgentSandboxServer.start(
            new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
            store,
            new RunWiring(
                List.of(new DockerBackend(docker, DockerBackendConfig.defaults())),
                new OperatorEgress(Map.of()),
                RunSettings.defaults(name + System.nanoTime()),
                RunWiring.every(reaperEvery)));
    client = new ApiClient(server.baseUrl(), requestTimeout);
    admin = store.tokens().create("it-admin", Scopes.ALL, null).secret();
    call(
        "PUT",
        BASE,
        """
        {"enabled": true, "backend": "docker", "reason": "%s",
         "agents": {"loop": {"allow": [], "image": "%s", "ttl_seconds": 300}}}
        """
            .formatted(test, IMAGE));
  }

  /** One admin-API exchange as the admin, asserted 2xx; its body. */
  JsonNode call(String method, String path, String body) {
    return client.send(method, path, admin, body).successJson();
  }

  /** Starts a run of agent {@code loop} and waits until it runs and has printed; its id. */
  String startLoop() throws Exception {
    JsonNode started =
        call(
            "POST",
            BASE + "/runs",
            JSON.writeValueAsString(Map.of("agent", "loop", "command", List.of("sh", "-c", LOOP))));
    String runId = started.path("run_id").asText();
    runs.add(runId);
    await("run " + runId + " looping")
        .atMost(Duration.ofSeconds(120))
        .pollInterval(Duration.ofMillis(250))
        .until(
            () -> {
              JsonNode run = call("GET", BASE + "/runs/" + runId, null);
              return run.path("status").asText().equals("running")
                  && run.path("output_tail").asText().contains("tick");
            });
    return runId;
  }

  @Override
  public void close() {
    try {
      if (server != null) {
        server.close();
      }
      if (store != null) {
        store.close();
      }
    } finally {
      try {
        if (!runs.isEmpty() && !dockerd.running()) {
          dockerd.start();
        }
      } catch (Exception e) {
        System.err.println("starting the private daemon again to clean up: " + e.getMessage());
      }
      for (String runId : runs) {
        removeQuietly(docker, runId);
      }
      dockerd.close();
    }
  }

  /** Whatever the test's run left, removed so that a failed assertion leaks nothing. */
  static void removeQuietly(DockerClient docker, String runId) {
    try {
      docker
          .listContainersCmd()
          .withShowAll(true)
          .withLabelFilter(Map.of(Labels.RUN_ID, runId))
          .exec()
          .forEach(c -> docker.removeContainerCmd(c.getId()).withForce(true).exec());
      docker
          .listNetworksCmd()
          .withFilter("label", List.of(Labels.RUN_ID + "=" + runId))
          .exec()
          .forEach(n -> docker.removeNetworkCmd(n.getId()).exec());
      docker
          .listVolumesCmd()
          .withFilter("label", List.of(Labels.RUN_ID + "=" + runId))
          .exec()
          .getVolumes()
          .forEach(v -> docker.removeVolumeCmd(v.getName()).exec());
    } catch (RuntimeException e) {
      System.err.println("cleaning up run " + runId + ": " + e.getMessage());
    }
  }
}
