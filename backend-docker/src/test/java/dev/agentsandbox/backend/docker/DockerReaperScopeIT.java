package dev.agentsandbox.backend.docker;

import static org.assertj.core.api.Assertions.assertThat;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.command.InspectVolumeResponse;
import dev.agentsandbox.backend.Labels;
import dev.agentsandbox.backend.ReapReport;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.backend.Sandbox;
import dev.agentsandbox.backend.SandboxListener;
import dev.agentsandbox.testing.ItRuns;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Two control planes on one daemon, each with its own instance id: a reaper removes its own objects
 * whose run is over, and another control plane's only once their expiry has passed; objects without
 * an instance label (older versions) are judged by their run as before. The objects are real: a
 * sandbox launched by a backend, and labelled containers, networks and volumes created on the
 * daemon the way a backend labels them.
 *
 * <p>Every reap here is told that only this class's runs are over ({@link #OURS}): other runs on
 * the shared daemon are live for it, so it never removes anything but what it created (or what has
 * expired anyway).
 */
class DockerReaperScopeIT {
  private static final String A = "cpa" + DockerItSupport.SUITE.newRunId();
  private static final String B = "cpb" + DockerItSupport.SUITE.newRunId();

  /** This class's runs: none of them is live for either control plane. */
  private static final Predicate<String> OURS = runId -> !runId.startsWith("rsc");

  private static DockerClient client;
  private final List<Runnable> cleanup = new ArrayList<>();

  @BeforeAll
  static void daemon() {
    client = DockerItSupport.requireDaemon();
  }

  @AfterAll
  static void nothingOfOursIsLeft() {
    // Expired or not, every object of this class goes: a reaper without an instance judges every
    // object by its run, and this class's runs are over.
    new DockerReaper(client).reap(Instant.now(), OURS);
    assertThat(objectsOf("rsc")).as("objects this class created").isEmpty();
  }

  private static String runId() {
    return "rsc" + DockerItSupport.SUITE.newRunId().substring(2);
  }

  @Test
  void anotherControlPlanesLiveRunSurvivesAndItsOwnerReapsItOnceOver() {
    DockerBackend backendA =
        new DockerBackend(client, DockerBackendConfig.defaults().toBuilder().instance(A).build());
    DockerBackend backendB =
        new DockerBackend(client, DockerBackendConfig.defaults().toBuilder().instance(B).build());
    String runId = runId();
    RunSpec spec =
        new RunSpec(
            runId,
            "it-agent",
            DockerItSupport.WORKLOAD_IMAGE,
            List.of("sh", "-c", "sleep 300"),
            Map.of(),
            ItRuns.noEgress(),
            DockerItSupport.SUITE.smallCaps(),
            Duration.ofMinutes(5),
            Instant.now().plus(Duration.ofMinutes(10)),
            false);
    try (Sandbox live = backendA.launch(spec, SandboxListener.NONE)) {
      List<String> objects = objectsOf(runId);
      assertThat(objects)
          .as("the sandbox's containers, networks and volumes")
          .hasSizeGreaterThan(3);
      assertThat(instanceLabels(runId)).as("every object names its instance").containsOnly(A);

      // B does not know the run (its store never saw it): it is not B's to judge.
      ReapReport byB = backendB.reap(Instant.now(), OURS);

      assertThat(byB.removedRunIds()).doesNotContain(runId);
      assertThat(objectsOf(runId)).as("A's live run after B's reap").isEqualTo(objects);

      // Its own control plane, once the run is over (or after a restart that finds it over).
      ReapReport byA = backendA.reap(Instant.now(), OURS);

      assertThat(byA.removedRunIds()).contains(runId);
      assertThat(objectsOf(runId)).as("A's run after A's reap").isEmpty();
    }
  }

  @Test
  void anotherControlPlanesObjectsGoOnlyOnceExpired() {
    String expired = runId();
    String current = runId();
    create(expired, Instant.now().minus(Duration.ofMinutes(1)), A);
    create(current, Instant.now().plus(Duration.ofMinutes(10)), A);

    ReapReport byB = new DockerReaper(client, java.util.Optional.of(B)).reap(Instant.now(), OURS);

    assertThat(byB.problems()).isEmpty();
    assertThat(byB.removedRunIds()).contains(expired).doesNotContain(current);
    assertThat(objectsOf(expired)).as("A's expired objects, after B's reap").isEmpty();
    assertThat(objectsOf(current)).as("A's unexpired objects, after B's reap").hasSize(3);
  }

  @Test
  void ownObjectsAndUnlabelledOnesGoWhenTheirRunIsOver() {
    String own = runId();
    String unlabelled = runId();
    create(own, Instant.now().plus(Duration.ofMinutes(10)), B);
    create(unlabelled, Instant.now().plus(Duration.ofMinutes(10)), null);
    String liveUnlabelled = runId();
    create(liveUnlabelled, Instant.now().plus(Duration.ofMinutes(10)), null);

    ReapReport byB =
        new DockerReaper(client, java.util.Optional.of(B))
            .reap(Instant.now(), runId -> OURS.test(runId) || runId.equals(liveUnlabelled));

    assertThat(byB.removedRunIds()).contains(own, unlabelled).doesNotContain(liveUnlabelled);
    assertThat(objectsOf(own)).isEmpty();
    assertThat(objectsOf(unlabelled)).as("an older version's objects, run over").isEmpty();
    assertThat(objectsOf(liveUnlabelled)).as("an older version's live run").hasSize(3);
    new DockerReaper(client).reap(Instant.now(), OURS);
    assertThat(objectsOf(liveUnlabelled)).as("the same, once its run is over").isEmpty();
  }

  /**
   * A volume, a network and a created container labelled as a backend labels a run's objects, with
   * {@link Labels#INSTANCE} when {@code instance} is not null.
   */
  private static void create(String runId, Instant expiresAt, String instance) {
    Map<String, String> labels = new HashMap<>(Labels.forRun(runId, "it-agent", expiresAt));
    if (instance != null) {
      labels.put(Labels.INSTANCE, instance);
    }
    client.createVolumeCmd().withName("asb-" + runId + "-v").withLabels(labels).exec();
    client
        .createNetworkCmd()
        .withName("asb-" + runId + "-n")
        .withDriver("bridge")
        .withInternal(true)
        .withLabels(labels)
        .exec();
    client
        .createContainerCmd(DockerItSupport.WORKLOAD_IMAGE)
        .withName("asb-" + runId + "-c")
        .withCmd("true")
        .withLabels(labels)
        .exec();
  }

  /** Every container, network and volume whose run id starts with {@code prefix}. */
  private static List<String> objectsOf(String prefix) {
    List<String> found = new ArrayList<>();
    Map<String, String> managed = Map.of(Labels.MANAGED_BY, Labels.MANAGER);
    client
        .listContainersCmd()
        .withShowAll(true)
        .withLabelFilter(managed)
        .exec()
        .forEach(
            c -> {
              if (runOf(c.getLabels()).startsWith(prefix)) {
                found.add("container " + c.getId());
              }
            });
    client
        .listNetworksCmd()
        .withFilter("label", List.of(Labels.MANAGED_BY + "=" + Labels.MANAGER))
        .exec()
        .forEach(
            n -> {
              if (runOf(n.getLabels()).startsWith(prefix)) {
                found.add("network " + n.getName());
              }
            });
    List<InspectVolumeResponse> volumes =
        client
            .listVolumesCmd()
            .withFilter("label", List.of(Labels.MANAGED_BY + "=" + Labels.MANAGER))
            .exec()
            .getVolumes();
    if (volumes != null) {
      volumes.forEach(
          v -> {
            if (runOf(v.getLabels()).startsWith(prefix)) {
              found.add("volume " + v.getName());
            }
          });
    }
    found.sort(null);
    return found;
  }

  /** The instance label of every object of the run ("none" where it is missing). */
  private static Set<String> instanceLabels(String runId) {
    Set<String> found = new java.util.TreeSet<>();
    Map<String, String> ofRun = Map.of(Labels.RUN_ID, runId);
    client
        .listContainersCmd()
        .withShowAll(true)
        .withLabelFilter(ofRun)
        .exec()
        .forEach(c -> found.add(c.getLabels().getOrDefault(Labels.INSTANCE, "none")));
    String label = Labels.RUN_ID + "=" + runId;
    client
        .listNetworksCmd()
        .withFilter("label", List.of(label))
        .exec()
        .forEach(n -> found.add(n.getLabels().getOrDefault(Labels.INSTANCE, "none")));
    List<InspectVolumeResponse> volumes =
        client.listVolumesCmd().withFilter("label", List.of(label)).exec().getVolumes();
    if (volumes != null) {
      volumes.forEach(v -> found.add(v.getLabels().getOrDefault(Labels.INSTANCE, "none")));
    }
    return found;
  }

  private static String runOf(Map<String, String> labels) {
    return labels == null ? "" : labels.getOrDefault(Labels.RUN_ID, "");
  }
}
