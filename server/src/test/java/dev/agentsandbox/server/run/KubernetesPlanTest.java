package dev.agentsandbox.server.run;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.agentsandbox.backend.k8s.KubernetesBackend;
import dev.agentsandbox.backend.k8s.KubernetesBackendConfig;
import dev.agentsandbox.policy.config.Scopes;
import dev.agentsandbox.runs.OperatorEgress;
import dev.agentsandbox.runs.RunSettings;
import dev.agentsandbox.server.AgentSandboxServer;
import dev.agentsandbox.server.RunWiring;
import dev.agentsandbox.store.Store;
import dev.agentsandbox.testing.api.ApiClient;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.http.HttpRequest;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A control plane configured for {@code k8s} shows the whole bundle in plan, in creation order, as
 * JSON and as YAML, and creates nothing. The cluster is fabric8's mock API server.
 */
@EnableKubernetesMockClient(crud = true)
class KubernetesPlanTest {
  private static final String BASE = "/api/admin/platform/agent-sandbox";
  static KubernetesClient client;
  static KubernetesMockServer mock;

  @Test
  void planOnAKubernetesConfiguredServerShowsTheBundleAndCreatesNothing(@TempDir Path dir)
      throws Exception {
    KubernetesBackend backend =
        new KubernetesBackend(
            // The server's close closes its backend's client: each server gets one of its own.
            mock.createClient(),
            KubernetesBackendConfig.defaults("agent-sandbox/proxy:dev", "agent-sandbox"),
            Clock.systemUTC());
    try (Store store = Store.open("jdbc:sqlite:" + dir.resolve("k8s.db"));
        AgentSandboxServer server =
            AgentSandboxServer.start(
                new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
                store,
                new RunWiring(
                    List.of(backend),
                    OperatorEgress.NONE,
                    RunSettings.defaults("k8s-plan-test"),
                    RunWiring.every(Duration.ofHours(1))))) {
      String token = store.tokens().create("admin", Scopes.ALL, null).secret();
      ApiClient api = new ApiClient(server.baseUrl());
      ApiClient.Answer put =
          api.put(
              BASE,
              token,
              "{\"enabled\": true, \"backend\": \"k8s\", \"reason\": \"test\","
                  + " \"agents\": {\"helper\": {\"allow\": [\"api.vendor.com\"]}}}");
      assertThat(put.status()).as(put.body()).isEqualTo(200);
      int namespacesBefore = client.namespaces().list().getItems().size();

      ApiClient.Answer plan = plan(api, token, "application/json");
      assertThat(plan.status()).as(plan.body()).isEqualTo(200);
      JsonNode body = plan.json();
      assertThat(body.path("backend").asText()).isEqualTo("k8s");
      List<String> kinds = new ArrayList<>();
      body.path("manifests").forEach(m -> kinds.add(m.path("kind").asText()));
      assertThat(kinds)
          .startsWith("Namespace", "NetworkPolicy")
          .contains("ServiceAccount", "ResourceQuota", "LimitRange", "Service", "Pod")
          .endsWith("Job");
      assertThat(plan.body()).contains("api.vendor.com").contains("agent-run-");

      ApiClient.Answer yaml = plan(api, token, "application/yaml");
      assertThat(yaml.status()).isEqualTo(200);
      assertThat(yaml.body()).contains("kind: \"NetworkPolicy\"").contains("kind: \"Job\"");
      assertThat(client.namespaces().list().getItems()).hasSize(namespacesBefore);
    }
  }

  /**
   * An agent with credentials: the plan shows the run's Secret with each credential's key and a
   * redacted value, and the Job reading the variable from it, mints nothing and creates nothing.
   */
  @Test
  void planOfAnAgentWithCredentialsShowsTheSecretsKeysAndNoValue(@TempDir Path dir)
      throws Exception {
    KubernetesBackend backend =
        new KubernetesBackend(
            // The server's close closes its backend's client: each server gets one of its own.
            mock.createClient(),
            KubernetesBackendConfig.defaults("agent-sandbox/proxy:dev", "agent-sandbox"),
            Clock.systemUTC());
    try (Store store = Store.open("jdbc:sqlite:" + dir.resolve("k8s.db"));
        AgentSandboxServer server =
            AgentSandboxServer.start(
                new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
                store,
                new RunWiring(
                    List.of(backend),
                    OperatorEgress.NONE,
                    RunSettings.defaults("k8s-plan-test"),
                    RunWiring.every(Duration.ofHours(1))))) {
      String token = store.tokens().create("admin", Scopes.ALL, null).secret();
      ApiClient api = new ApiClient(server.baseUrl());
      ApiClient.Answer put =
          api.put(
              BASE,
              token,
              "{\"enabled\": true, \"backend\": \"k8s\", \"reason\": \"test\","
                  + " \"agents\": {\"helper\": {\"allow\": [\"api.vendor.com\"],"
                  + " \"credentials\": {\"self\": {\"source\": \"run-token\","
                  + " \"env\": \"SELF_TOKEN\"}}}}}");
      assertThat(put.status()).as(put.body()).isEqualTo(200);
      int tokensBefore = store.tokens().list().size();
      int namespacesBefore = client.namespaces().list().getItems().size();

      ApiClient.Answer plan = plan(api, token, "application/json");
      assertThat(plan.status()).as(plan.body()).isEqualTo(200);
      JsonNode manifests = plan.json().path("manifests");
      JsonNode secret = manifests.get(manifests.size() - 2);
      assertThat(secret.path("kind").asText()).isEqualTo("Secret");
      assertThat(secret.path("name").asText()).isEqualTo("run-credentials");
      assertThat(secret.path("body").path("stringData").path("self").asText())
          .isEqualTo("<redacted>");
      assertThat(secret.path("body").path("immutable").asBoolean()).isTrue();
      JsonNode job = manifests.get(manifests.size() - 1);
      assertThat(job.path("kind").asText()).isEqualTo("Job");
      assertThat(job.toString())
          .contains("\"secretKeyRef\"", "\"key\":\"self\"", "\"name\":\"SELF_TOKEN\"");
      assertThat(plan.body()).doesNotContain("minted at launch");
      assertThat(store.tokens().list()).hasSize(tokensBefore);
      assertThat(client.namespaces().list().getItems()).hasSize(namespacesBefore);
    }
  }

  private static ApiClient.Answer plan(ApiClient api, String token, String accept) {
    return api.send(
        api.builder(BASE + "/plan", token)
            .header("Content-Type", "application/json")
            .header("Accept", accept)
            .POST(
                HttpRequest.BodyPublishers.ofString(
                    "{\"agent\": \"helper\", \"command\": [\"python\", \"job.py\"]}")));
  }
}
