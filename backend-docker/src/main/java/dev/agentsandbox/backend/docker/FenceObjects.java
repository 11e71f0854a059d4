package dev.agentsandbox.backend.docker;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Function;

/**
 * What a sandbox creates before its workload, in creation order: the two tmpfs volumes (three for a
 * run that inspects hosts), the fence and egress networks and the proxy, as a run's layout or a
 * proxy-pool standby's describes them ({@link RunLayout#fenceObjects()}, {@link
 * FenceLayout#standbyObjects()}).
 *
 * @param trust the trust volume of a run that inspects hosts ({@link DockerInspection}); the proxy
 *     mounts it, so it is created before the proxy
 * @param proxyAt the proxy container for its address on the fence network, known once the fence's
 *     block is taken
 * @param awaiting whether the proxy starts awaiting its policy (a standby's) rather than with it
 */
record FenceObjects(
    VolumeSpec workspace,
    VolumeSpec credentials,
    Optional<VolumeSpec> trust,
    NetworkSpec fence,
    NetworkSpec egress,
    Function<String, ContainerSpec> proxyAt,
    boolean awaiting) {
  FenceObjects {
    Objects.requireNonNull(trust, "trust");
  }

  /** The volumes, in creation order. */
  List<VolumeSpec> volumes() {
    List<VolumeSpec> volumes = new ArrayList<>(List.of(workspace, credentials));
    trust.ifPresent(volumes::add);
    return List.copyOf(volumes);
  }
}
