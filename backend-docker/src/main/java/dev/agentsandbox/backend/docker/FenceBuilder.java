package dev.agentsandbox.backend.docker;

import com.github.dockerjava.api.DockerClient;
import dev.agentsandbox.backend.SandboxException;
import dev.agentsandbox.backend.SandboxListener;
import java.time.Duration;

/**
 * Creates what a sandbox has before its workload ({@link FenceObjects}): the volumes, the fence and
 * egress networks each in a block of the subnet pool, and the proxy on both, started and listening
 * on its fence address; for a cold run (the proxy started with the run's policy) and for a
 * proxy-pool standby (the proxy awaiting it) alike. Every object is recorded in the sandbox's
 * {@link SandboxObjects} as it is created; a failing step removes them all ({@link LaunchSteps}).
 */
final class FenceBuilder {
  /** How many blocks one network may try when the daemon refuses them as overlapping. */
  static final int OVERLAP_ATTEMPTS = 8;

  /** The fence network's block is the first of a sandbox's two; the egress network's the second. */
  private static final int FENCE_SLOT = 0;

  private static final int EGRESS_SLOT = 1;

  private FenceBuilder() {}

  /** The started proxy: its container, name and fence address, and its followed output. */
  record StartedProxy(String containerId, String name, String address, ProxyOutput output) {}

  /**
   * Builds the fence and starts the proxy; waits (at most {@code readyTimeout}) for its ready line,
   * or for its awaiting line when {@code fence.awaiting()}.
   *
   * @param listener where the proxy's decisions go from the start
   * @throws dev.agentsandbox.backend.UnableToLaunchSandboxException naming the step that failed;
   *     everything created is removed by then
   */
  static StartedProxy build(
      DockerClient client,
      FenceObjects fence,
      Duration readyTimeout,
      SandboxListener listener,
      SandboxObjects objects,
      LaunchSteps steps) {
    // Both blocks before anything is created: an exhausted pool refuses the sandbox cleanly.
    objects.allocateBlocks(SubnetPool.BLOCKS_PER_RUN);
    for (VolumeSpec volume : fence.volumes()) {
      objects.volume(volume.name());
      steps.run(
          "creating volume " + volume.name(), () -> DockerCommands.createVolume(client, volume));
    }
    String fenceId =
        steps.step(
            "creating network " + fence.fence().name(),
            () -> createNetwork(client, fence.fence(), FENCE_SLOT, objects));
    objects.network(fenceId);
    String egressId =
        steps.step(
            "creating network " + fence.egress().name(),
            () -> createNetwork(client, fence.egress(), EGRESS_SLOT, objects));
    objects.network(egressId);

    String address = objects.blocks().get(FENCE_SLOT).firstMember();
    ContainerSpec proxy = fence.proxyAt().apply(address);
    String proxyId =
        steps.step(
            "creating proxy container " + proxy.name() + " from image " + proxy.image(),
            () -> DockerCommands.createContainer(client, proxy, fence.awaiting()));
    objects.container(proxyId);
    steps.run(
        "connecting proxy container " + proxy.name() + " to " + fence.egress().name(),
        () -> client.connectToNetworkCmd().withNetworkId(egressId).withContainerId(proxyId).exec());
    steps.run(
        "starting proxy container " + proxy.name(), () -> client.startContainerCmd(proxyId).exec());
    ProxyOutput output =
        steps.step(
            "following the output of proxy container " + proxy.name(),
            () -> follow(client, proxyId, new ProxyOutput(listener), objects));
    String awaited = fence.awaiting() ? "await its policy" : "listen";
    steps.run(
        "waiting for proxy container " + proxy.name() + " to " + awaited,
        () -> {
          long millis = readyTimeout.toMillis();
          boolean seen =
              fence.awaiting() ? output.awaitAwaiting(millis) : output.awaitReady(millis);
          if (!seen) {
            throw new SandboxException(
                "no "
                    + (fence.awaiting() ? "awaiting" : "ready")
                    + " line within "
                    + readyTimeout.toSeconds()
                    + " s; its last output: "
                    + output.lastErrors());
          }
        });
    return new StartedProxy(proxyId, proxy.name(), address, output);
  }

  /** Follows a container's output into {@code callback}, recorded to be closed at teardown. */
  static <
          T extends
              com.github.dockerjava.api.async.ResultCallback.Adapter<
                      com.github.dockerjava.api.model.Frame>>
      T follow(DockerClient client, String containerId, T callback, SandboxObjects objects) {
    T started =
        client
            .logContainerCmd(containerId)
            .withFollowStream(true)
            .withStdOut(true)
            .withStdErr(true)
            .exec(callback);
    objects.stream(started);
    return started;
  }

  /**
   * Creates a network in the sandbox's {@code slot}-th block; when the daemon refuses the block as
   * overlapping a network the allocator did not see (another control plane on the same range), sets
   * it aside and tries the next free one, a bounded number of times.
   */
  private static String createNetwork(
      DockerClient client, NetworkSpec spec, int slot, SandboxObjects objects) {
    SubnetAllocator.Block block = objects.blocks().get(slot);
    for (int attempt = 1; ; attempt++) {
      try {
        return DockerCommands.createNetwork(client, spec, block);
      } catch (RuntimeException e) {
        if (!DockerErrors.subnetTaken(e) || attempt == OVERLAP_ATTEMPTS) {
          throw e;
        }
        block = objects.replaceRefusedBlock(slot);
      }
    }
  }
}
