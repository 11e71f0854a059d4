package dev.agentsandbox.testing;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.command.InspectVolumeResponse;
import dev.agentsandbox.backend.Labels;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

/**
 * What the Docker backend's runs left on a daemon, by their labels ({@link Labels}), as {@code
 * "container NAME"}, {@code "network NAME"} and {@code "volume NAME"}: what an IT asserts is gone
 * after a teardown or a reap, written once for the backend's and the server's ITs. Needs
 * docker-java, which this module leaves to the tests that use it.
 */
public final class DockerObjects {
  private DockerObjects() {}

  /** The containers, networks and volumes labelled with the run id {@code runId}. */
  public static List<String> ofRun(DockerClient docker, String runId) {
    String label = Labels.RUN_ID + "=" + runId;
    List<String> found = new ArrayList<>(containersOfRun(docker, runId));
    docker
        .listNetworksCmd()
        .withFilter("label", List.of(label))
        .exec()
        .forEach(n -> found.add("network " + n.getName()));
    List<InspectVolumeResponse> volumes =
        docker.listVolumesCmd().withFilter("label", List.of(label)).exec().getVolumes();
    if (volumes != null) {
      volumes.forEach(v -> found.add("volume " + v.getName()));
    }
    return found;
  }

  /** The containers, running or not, labelled with the run id {@code runId}. */
  public static List<String> containersOfRun(DockerClient docker, String runId) {
    List<String> found = new ArrayList<>();
    docker
        .listContainersCmd()
        .withShowAll(true)
        .withLabelFilter(Map.of(Labels.RUN_ID, runId))
        .exec()
        .forEach(c -> found.add("container " + String.join(",", c.getNames())));
    return found;
  }

  /** The containers, networks and volumes of runs whose id starts with {@code prefix}. */
  public static List<String> ofRunsStartingWith(DockerClient docker, String prefix) {
    return managed(docker, labels -> labels.getOrDefault(Labels.RUN_ID, "").startsWith(prefix));
  }

  /**
   * The containers, networks and volumes managed by the backend ({@link Labels#MANAGED_BY}) whose
   * labels {@code ours} accepts: a suite's own, apart from a control plane sharing the daemon.
   */
  public static List<String> managed(DockerClient docker, Predicate<Map<String, String>> ours) {
    Predicate<Map<String, String>> labelled = labels -> labels != null && ours.test(labels);
    String managed = Labels.MANAGED_BY + "=" + Labels.MANAGER;
    List<String> found = new ArrayList<>();
    docker
        .listContainersCmd()
        .withShowAll(true)
        .withLabelFilter(Map.of(Labels.MANAGED_BY, Labels.MANAGER))
        .exec()
        .stream()
        .filter(c -> labelled.test(c.getLabels()))
        .forEach(c -> found.add("container " + String.join(",", c.getNames())));
    docker.listNetworksCmd().withFilter("label", List.of(managed)).exec().stream()
        .filter(n -> labelled.test(n.getLabels()))
        .forEach(n -> found.add("network " + n.getName()));
    List<InspectVolumeResponse> volumes =
        docker.listVolumesCmd().withFilter("label", List.of(managed)).exec().getVolumes();
    if (volumes != null) {
      volumes.stream()
          .filter(v -> labelled.test(v.getLabels()))
          .forEach(v -> found.add("volume " + v.getName()));
    }
    return found;
  }
}
