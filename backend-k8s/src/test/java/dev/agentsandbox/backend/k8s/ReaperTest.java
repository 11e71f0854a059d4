package dev.agentsandbox.backend.k8s;

import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.backend.Labels;
import dev.agentsandbox.backend.ReapReport;
import io.fabric8.kubernetes.api.model.NamespaceBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import java.time.Clock;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** Which namespaces one reaper pass deletes, one named row per case. */
@EnableKubernetesMockClient(crud = true)
class ReaperTest {
  private static final Instant NOW = Instant.parse("2030-06-01T12:00:00Z");
  private static final Set<String> LIVE = Set.of("live1", "live2", "live3");

  static KubernetesClient client;

  @BeforeEach
  void clean() {
    client.namespaces().list().getItems().forEach(ns -> client.resource(ns).delete());
  }

  static Stream<Arguments> namespaces() {
    String past = Long.toString(NOW.minusSeconds(1).getEpochSecond());
    String future = Long.toString(NOW.plusSeconds(3600).getEpochSecond());
    return Stream.of(
        row(
            "an expired namespace of a live run is deleted",
            "agent-run-live1",
            labels("live1", past),
            true),
        row(
            "an unexpired namespace of a run that is over is deleted",
            "agent-run-gone1",
            labels("gone1", future),
            true),
        row(
            "an unexpired namespace of a live run is kept",
            "agent-run-live2",
            labels("live2", future),
            false),
        row(
            "a namespace expiring exactly now is deleted",
            "agent-run-live3",
            labels("live3", Long.toString(NOW.getEpochSecond())),
            true),
        row(
            "a sandbox namespace with a garbled expiry is deleted",
            "agent-run-gone2",
            labels("gone2", "soon"),
            true),
        row(
            "an agent-run namespace without the managed-by label is never touched",
            "agent-run-gone3",
            without(labels("gone3", past), Labels.MANAGED_BY),
            false),
        row(
            "a managed namespace whose name is not its run's is never touched",
            "production",
            labels("gone4", past),
            false),
        row(
            "a managed namespace without a run id is never touched",
            "agent-run-gone5",
            without(labels("gone5", past), Labels.RUN_ID),
            false),
        row(
            "a namespace managed by something else is never touched",
            "agent-run-gone6",
            with(labels("gone6", past), Labels.MANAGED_BY, "helm"),
            false));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("namespaces")
  void reaps(String name, String namespace, Map<String, String> labels, boolean deleted) {
    client
        .namespaces()
        .resource(
            new NamespaceBuilder()
                .withNewMetadata()
                .withName(namespace)
                .withLabels(labels)
                .endMetadata()
                .build())
        .create();
    KubernetesBackend backend = new KubernetesBackend(client, Specs.config(), Clock.systemUTC());
    ReapReport report = backend.reap(NOW, LIVE::contains);
    assertThat(client.namespaces().withName(namespace).get() == null).as(name).isEqualTo(deleted);
    if (deleted) {
      assertThat(report.removedRunIds()).containsExactly(labels.get(Labels.RUN_ID));
    } else {
      assertThat(report.removedRunIds()).isEmpty();
    }
    assertThat(report.problems()).isEmpty();
  }

  private static Map<String, String> labels(String runId, String expiry) {
    Map<String, String> labels = new HashMap<>(Labels.forRun(runId, "helper", NOW));
    labels.put(Labels.EXPIRES_AT, expiry);
    return labels;
  }

  private static Map<String, String> without(Map<String, String> labels, String key) {
    labels.remove(key);
    return labels;
  }

  private static Map<String, String> with(Map<String, String> labels, String key, String value) {
    labels.put(key, value);
    return labels;
  }

  private static Arguments row(
      String name, String namespace, Map<String, String> labels, boolean deleted) {
    return Arguments.of(name, namespace, labels, deleted);
  }
}
