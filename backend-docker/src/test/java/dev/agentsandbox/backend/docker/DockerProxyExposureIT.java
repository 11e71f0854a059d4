package dev.agentsandbox.backend.docker;

import static dev.agentsandbox.backend.docker.DockerItSupport.SUITE;
import static dev.agentsandbox.backend.docker.DockerItSupport.cleanUpAndAssertNothingLeft;
import static dev.agentsandbox.testing.ItRuns.noEgress;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.fail;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.model.Capability;
import com.github.dockerjava.api.model.ContainerNetwork;
import com.github.dockerjava.api.model.HostConfig;
import dev.agentsandbox.backend.Completion;
import dev.agentsandbox.backend.Labels;
import dev.agentsandbox.backend.Sandbox;
import dev.agentsandbox.testing.RecordingListener;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Issue 26 item 10 on the Docker backend, tried from where an attacker stands. A run's proxy is on
 * two networks: the fence (its workload's only way out) and the egress network, whose bridge gives
 * this host an address. Listening on every address, the proxy served anyone on the host or on the
 * egress network, and wrote their requests into the run's audit trail; it must listen on its fence
 * address only. And a pooled standby's refusals before any policy belong to no run: the run that
 * takes the standby must not inherit them.
 */
class DockerProxyExposureIT {
  private static DockerClient client;

  @BeforeAll
  static void daemon() {
    client = DockerItSupport.requireDaemon();
  }

  @AfterAll
  static void nothingLeft() {
    if (client != null) {
      cleanUpAndAssertNothingLeft(client);
    }
  }

  @Test
  void aColdRunsProxyServesItsFenceAndRefusesTheHostOnTheEgressSide() throws Exception {
    DockerBackend backend = new DockerBackend(client, DockerBackendConfig.defaults());
    String runId = SUITE.newRunId();
    RecordingListener listener = new RecordingListener();
    try (Sandbox sandbox =
        backend.launch(
            SUITE.spec(
                runId,
                List.of("sleep", "120"),
                noEgress(),
                SUITE.smallCaps(),
                Duration.ofMinutes(3)),
            listener,
            "runc")) {
      DockerSandbox docker = (DockerSandbox) sandbox;
      assertServesTheFenceOnly(
          docker.workloadContainerId(),
          docker.proxyContainerId(),
          docker.proxyAddress(),
          FenceLayout.egressName(runId));
      sandbox.kill();
      assertThat(sandbox.await(Instant.now().plus(Duration.ofMinutes(1))).end())
          .isEqualTo(Completion.End.KILLED);
    }
  }

  @Test
  void aStandbysProxyRefusesTheHostAndItsRunInheritsNoneOfItsRefusals() throws Exception {
    DockerBackend backend =
        new DockerBackend(
            client, DockerBackendConfig.defaults().toBuilder().proxyPoolSize(1).build());
    String probe = null;
    try {
      await(() -> backend.proxyPoolReady().size() == 1);
      String standbyId = backend.proxyPoolReady().get(0);
      String standbyProxy = "asb-" + standbyId + "-proxy";
      String proxyAddress = endpoint(standbyProxy, FenceLayout.fenceName(standbyId)).getIpAddress();
      String standbyEgress =
          endpoint(standbyProxy, FenceLayout.egressName(standbyId)).getIpAddress();
      assertThatExceptionOfType(ConnectException.class)
          .as("the standby's proxy from this host, at %s on the egress side", standbyEgress)
          .isThrownBy(() -> connect(standbyEgress));

      // Requests before any run took the standby, from a container on its fence.
      probe = probeOn(FenceLayout.fenceName(standbyId));
      for (int i = 0; i < 3; i++) {
        String answer =
            DockerItSupport.exec(
                    client,
                    probe,
                    "curl -sS -i --max-time 10 -x http://"
                        + proxyAddress
                        + ":3128 http://before.test/")
                .output();
        assertThat(answer).containsIgnoringCase("X-Agent-Sandbox-Denied: policy-pending");
      }
      // Gone before the run takes the standby: the run's teardown removes the fence network.
      client.removeContainerCmd(probe).withForce(true).exec();
      probe = null;

      String runId = SUITE.newRunId();
      RecordingListener listener = new RecordingListener();
      try (Sandbox sandbox =
          backend.launch(
              SUITE.spec(
                  runId,
                  List.of("sh", "-c", "curl -sS -i --max-time 10 http://mine.test/; true"),
                  noEgress(),
                  SUITE.smallCaps(),
                  Duration.ofMinutes(3)),
              listener,
              "runc")) {
        assertThat(sandbox.pooledProxy()).as("built on the standby").hasValue(standbyId);
        Completion completion = sandbox.await(Instant.now().plus(Duration.ofMinutes(2)));
        assertThat(completion.end()).as(listener.output()).isEqualTo(Completion.End.EXIT);
      }
      assertThat(listener.decisions)
          .as("the run's decisions: its own request, none of the standby's before")
          .hasSize(1)
          .allMatch(d -> d.contains("mine.test") && d.contains("\"run_id\":\"" + runId + "\""))
          .noneMatch(d -> d.contains("policy-pending") || d.contains("before.test"));
    } finally {
      if (probe != null) {
        client.removeContainerCmd(probe).withForce(true).exec();
      }
      backend.close();
    }
  }

  /**
   * The proxy answers on its fence address from inside the sandbox (a refusal, with its header),
   * and this host cannot even connect to its address on the egress network.
   */
  private static void assertServesTheFenceOnly(
      String workload, String proxyId, String fenceAddress, String egressNetwork) throws Exception {
    String inside =
        DockerItSupport.exec(
                client,
                workload,
                "curl -sS -i --max-time 10 -x http://" + fenceAddress + ":3128 http://a.test/")
            .output();
    assertThat(inside).startsWith("HTTP/1.1 403").containsIgnoringCase("X-Agent-Sandbox-Denied");
    String egressAddress = endpoint(proxyId, egressNetwork).getIpAddress();
    assertThat(egressAddress).isNotEqualTo(fenceAddress);
    assertThatExceptionOfType(ConnectException.class)
        .as("the run's proxy from this host, at %s on the egress side", egressAddress)
        .isThrownBy(() -> connect(egressAddress));
  }

  /** Connects to {@code address}:3128, a container this test's backend created; at most 5 s. */
  private static void connect(String address) throws Exception {
    try (Socket socket = new Socket()) {
      socket.connect(new InetSocketAddress(address, 3128), 5000);
    }
  }

  private static ContainerNetwork endpoint(String container, String network) {
    ContainerNetwork endpoint =
        client
            .inspectContainerCmd(container)
            .exec()
            .getNetworkSettings()
            .getNetworks()
            .get(network);
    assertThat(endpoint).as("%s on %s", container, network).isNotNull();
    return endpoint;
  }

  private static String probeOn(String network) {
    String id =
        client
            .createContainerCmd(DockerItSupport.WORKLOAD_IMAGE)
            .withName("asb-" + SUITE.newRunId() + "-probe")
            .withCmd("sleep", "300")
            .withUser("65534:65534")
            .withLabels(
                Labels.forRun(
                    SUITE.newRunId(), "it-agent", Instant.now().plus(Duration.ofMinutes(30))))
            .withHostConfig(
                HostConfig.newHostConfig()
                    .withRuntime("runc")
                    .withNetworkMode(network)
                    .withCapDrop(Capability.ALL)
                    .withReadonlyRootfs(true)
                    .withTmpFs(Map.of("/tmp", "rw,size=16m")))
            .exec()
            .getId();
    client.startContainerCmd(id).exec();
    return id;
  }

  private static void await(java.util.function.BooleanSupplier condition) throws Exception {
    for (int i = 0; i < 1200; i++) {
      if (condition.getAsBoolean()) {
        return;
      }
      Thread.sleep(100);
    }
    fail("no standby ready within 120 s");
  }
}
