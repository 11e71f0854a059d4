package dev.agentsandbox.server.faults;

import static dev.agentsandbox.server.faults.FaultControlPlane.BASE;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.github.dockerjava.api.DockerClient;
import dev.agentsandbox.testing.DockerObjects;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Fault: the run's proxy container is killed (SIGKILL through the daemon) while its workload loops.
 * The run must end at once as failed with its own reason ({@code proxy_died}) and audit row, and
 * nothing of the run may be left on the daemon. A real server on loopback, a real SQLite store, the
 * real Docker backend and images, on a Docker daemon of the test's own ({@link PrivateDockerd}), so
 * that killing containers can touch nothing but the test's and the test needs nothing of the
 * machine's daemon but its images (issue 26 item 19).
 */
class ProxyDiedIT {
  @Test
  void aKilledProxyEndsTheRunAsProxyDiedAndLeavesNothing() throws Exception {
    try (FaultControlPlane plane =
        FaultControlPlane.start("ProxyDiedIT", Duration.ofHours(1), Duration.ofSeconds(60))) {
      DockerClient docker = plane.docker;
      String runId = plane.startLoop();

      docker.killContainerCmd("asb-" + runId + "-proxy").exec();

      // Without the watch on the proxy, the loop runs on for minutes; 60 s is a bound, not a
      // timing.
      JsonNode ended =
          await("run " + runId + " to end after its proxy died")
              .atMost(Duration.ofSeconds(60))
              .pollInterval(Duration.ofMillis(250))
              .until(
                  () -> plane.call("GET", BASE + "/runs/" + runId, null),
                  run -> !run.path("status").asText().equals("running"));
      assertThat(ended.path("status").asText()).as(ended.toString()).isEqualTo("failed");
      assertThat(ended.path("end").asText()).as(ended.toString()).isEqualTo("proxy_died");

      // The sandbox is removed after the result is answered; its teardown row follows.
      JsonNode rows =
          await()
              .atMost(Duration.ofSeconds(60))
              .pollInterval(Duration.ofMillis(250))
              .until(
                  () ->
                      plane
                          .call(
                              "GET", "/api/admin/platform/audit?run=" + runId + "&limit=1000", null)
                          .path("rows"),
                  r -> r.toString().contains("agent_sandbox.teardown"));
      List<String> types = new ArrayList<>();
      JsonNode died = null;
      for (JsonNode row : rows) {
        types.add(row.path("type").asText());
        if (row.path("type").asText().equals("agent_sandbox.proxy_died")) {
          died = row;
        }
      }
      assertThat(types)
          .as(rows.toString())
          .contains("agent_sandbox.launch", "agent_sandbox.proxy_died", "agent_sandbox.teardown")
          .doesNotContain("agent_sandbox.timeout", "agent_sandbox.failure");
      assertThat(died.path("data").path("message").asText())
          .contains("egress proxy stopped")
          .contains("status 137");
      JsonNode teardown = null;
      for (JsonNode row : rows) {
        if (row.path("type").asText().equals("agent_sandbox.teardown")) {
          teardown = row;
        }
      }
      assertThat(teardown.path("data").path("end").asText()).isEqualTo("proxy_died");
      assertThat(teardown.path("data").path("removed").asBoolean())
          .as(teardown.toString())
          .isTrue();
      assertThat(DockerObjects.ofRun(docker, runId)).as("left on the daemon").isEmpty();
      JsonNode verify = plane.call("GET", "/api/admin/platform/audit/verify", null);
      assertThat(verify.path("ok").asBoolean()).as(verify.toString()).isTrue();
    }
  }
}
