package dev.agentsandbox.backend.docker;

import java.util.function.Function;

/**
 * What a sandbox creates before its workload, in creation order: the two tmpfs volumes, the fence
 * and egress networks and the proxy, as a run's layout or a proxy-pool standby's describes them
 * ({@link RunLayout#fenceObjects()}, {@link RunLayout#standbyFence}).
 *
 * @param proxyAt the proxy container for its address on the fence network, known once the fence's
 *     block is taken
 * @param awaiting whether the proxy starts awaiting its policy (a standby's) rather than with it
 */
record FenceObjects(
    VolumeSpec workspace,
    VolumeSpec credentials,
    NetworkSpec fence,
    NetworkSpec egress,
    Function<String, ContainerSpec> proxyAt,
    boolean awaiting) {}
