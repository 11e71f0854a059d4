package dev.agentsandbox.backend.docker;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.command.InspectVolumeResponse;
import com.github.dockerjava.api.model.Container;
import com.github.dockerjava.api.model.Network;
import dev.agentsandbox.backend.Labels;
import dev.agentsandbox.backend.ReapReport;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Predicate;

/**
 * Removes the containers, volumes and networks of runs that are over, found by label alone, so that
 * it also cleans up after a control plane that crashed mid-run. Never touches anything without
 * {@link Labels#MANAGED_BY}{@code =}{@link Labels#MANAGER}.
 *
 * <p>Scoped to its control plane when given its {@code instance}: an object labelled with another
 * {@link Labels#INSTANCE} belongs to another control plane on the same daemon, whose runs this one
 * cannot judge, and is removed only once its expiry has passed. Objects of this instance, and
 * objects without the label (created before it existed), go when their expiry has passed or their
 * run is not live here.
 */
final class DockerReaper {
  private final DockerClient client;
  private final Optional<String> instance;

  /** A reaper that judges every object by its run alone (no instance). */
  DockerReaper(DockerClient client) {
    this(client, Optional.empty());
  }

  DockerReaper(DockerClient client, Optional<String> instance) {
    this.client = client;
    this.instance = instance;
  }

  ReapReport reap(Instant now, Predicate<String> isLive) {
    Set<String> removed = new TreeSet<>();
    List<String> problems = new ArrayList<>();
    List<Container> containers;
    List<Network> networks;
    List<InspectVolumeResponse> volumes;
    try {
      containers =
          client
              .listContainersCmd()
              .withShowAll(true)
              .withLabelFilter(Map.of(Labels.MANAGED_BY, Labels.MANAGER))
              .exec();
      networks =
          client
              .listNetworksCmd()
              .withFilter("label", List.of(Labels.MANAGED_BY + "=" + Labels.MANAGER))
              .exec();
      List<InspectVolumeResponse> listed =
          client
              .listVolumesCmd()
              .withFilter("label", List.of(Labels.MANAGED_BY + "=" + Labels.MANAGER))
              .exec()
              .getVolumes();
      volumes = listed == null ? List.of() : listed;
    } catch (RuntimeException e) {
      return new ReapReport(
          List.of(), List.of("listing labelled resources: " + DockerErrors.describe(e)));
    }
    // Containers first: Docker refuses to remove a network that still has endpoints.
    for (Container container : containers) {
      Map<String, String> labels = container.getLabels() == null ? Map.of() : container.getLabels();
      String runId = labels.getOrDefault(Labels.RUN_ID, "");
      if (!over(labels, runId, now, isLive)) {
        continue;
      }
      try {
        client.removeContainerCmd(container.getId()).withForce(true).withRemoveVolumes(true).exec();
        removed.add(runId);
      } catch (RuntimeException e) {
        if (!DockerErrors.alreadyDone(e)) {
          problems.add(
              "removing container "
                  + container.getId()
                  + " of run "
                  + runId
                  + ": "
                  + DockerErrors.describe(e));
        }
      }
    }
    // After the containers: Docker refuses to remove a volume a container still uses.
    for (InspectVolumeResponse volume : volumes) {
      Map<String, String> labels = volume.getLabels() == null ? Map.of() : volume.getLabels();
      String runId = labels.getOrDefault(Labels.RUN_ID, "");
      if (!Labels.MANAGER.equals(labels.get(Labels.MANAGED_BY))
          || !over(labels, runId, now, isLive)) {
        continue;
      }
      try {
        client.removeVolumeCmd(volume.getName()).exec();
        removed.add(runId);
      } catch (RuntimeException e) {
        if (!DockerErrors.alreadyDone(e)) {
          problems.add(
              "removing volume "
                  + volume.getName()
                  + " of run "
                  + runId
                  + ": "
                  + DockerErrors.describe(e));
        }
      }
    }
    for (Network network : networks) {
      Map<String, String> labels = network.getLabels() == null ? Map.of() : network.getLabels();
      String runId = labels.getOrDefault(Labels.RUN_ID, "");
      if (!Labels.MANAGER.equals(labels.get(Labels.MANAGED_BY))
          || !over(labels, runId, now, isLive)) {
        continue;
      }
      try {
        client.removeNetworkCmd(network.getId()).exec();
        removed.add(runId);
      } catch (RuntimeException e) {
        if (!DockerErrors.alreadyDone(e)) {
          problems.add(
              "removing network "
                  + network.getName()
                  + " of run "
                  + runId
                  + ": "
                  + DockerErrors.describe(e));
        }
      }
    }
    return new ReapReport(List.copyOf(removed), problems);
  }

  /**
   * Over: expired (or its expiry garbled), whoever created it; else, unless another control plane
   * created it, garbled (no run id) or no longer live for this control plane.
   */
  private boolean over(
      Map<String, String> labels, String runId, Instant now, Predicate<String> isLive) {
    if (!Labels.expiresAt(labels).isAfter(now)) {
      return true;
    }
    String owner = labels.get(Labels.INSTANCE);
    if (owner != null && instance.isPresent() && !owner.equals(instance.get())) {
      return false;
    }
    return runId.isEmpty() || !isLive.test(runId);
  }
}
