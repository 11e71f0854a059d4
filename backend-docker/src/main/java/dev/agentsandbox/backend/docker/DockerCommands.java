package dev.agentsandbox.backend.docker;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.command.CreateContainerCmd;
import com.github.dockerjava.api.command.CreateNetworkCmd;
import com.github.dockerjava.api.model.Capability;
import com.github.dockerjava.api.model.HostConfig;
import com.github.dockerjava.api.model.LogConfig;
import com.github.dockerjava.api.model.Mount;
import com.github.dockerjava.api.model.MountType;
import com.github.dockerjava.api.model.Network;

/** Turns {@link NetworkSpec} and {@link ContainerSpec} into docker-java calls, field for field. */
final class DockerCommands {
  private DockerCommands() {}

  /** Creates the network in {@code block} and returns its id. */
  static String createNetwork(DockerClient client, NetworkSpec spec, SubnetAllocator.Block block) {
    CreateNetworkCmd create =
        client
            .createNetworkCmd()
            .withIpam(
                new Network.Ipam()
                    .withDriver("default")
                    .withConfig(
                        new Network.Ipam.Config()
                            .withSubnet(block.subnet())
                            .withGateway(block.gateway())));
    return create
        .withName(spec.name())
        .withDriver("bridge")
        .withInternal(spec.internal())
        .withEnableIpv6(false)
        .withAttachable(false)
        .withCheckDuplicate(true)
        .withOptions(spec.options())
        .withLabels(spec.labels())
        .exec()
        .getId();
  }

  /** Creates the volume and returns its name. */
  static String createVolume(DockerClient client, VolumeSpec spec) {
    return client
        .createVolumeCmd()
        .withName(spec.name())
        .withDriver("local")
        .withDriverOpts(spec.driverOptions())
        .withLabels(spec.labels())
        .exec()
        .getName();
  }

  /** Creates the container (without starting it) and returns its id. */
  static String createContainer(DockerClient client, ContainerSpec spec) {
    return createContainer(client, spec, false);
  }

  /**
   * Creates the container; with {@code openStdin} its standard input stays open until the first
   * client attached to it detaches ({@code OpenStdin}, {@code StdinOnce}): a pooled proxy's policy
   * channel, which only a holder of the Docker socket can write to.
   */
  static String createContainer(DockerClient client, ContainerSpec spec, boolean openStdin) {
    HostConfig host =
        HostConfig.newHostConfig()
            .withRuntime(spec.runtime())
            .withNetworkMode(spec.network())
            .withPrivileged(false)
            .withCapDrop(Capability.ALL)
            .withSecurityOpts(ContainerSpec.SECURITY_OPT)
            .withReadonlyRootfs(true)
            .withTmpFs(spec.tmpfs())
            .withMounts(
                spec.mounts().stream()
                    .map(
                        m ->
                            new Mount()
                                .withType(MountType.VOLUME)
                                .withSource(m.volume())
                                .withTarget(m.target())
                                .withReadOnly(m.readOnly()))
                    .toList())
            .withMemory(spec.memoryBytes())
            .withMemorySwap(spec.memoryBytes())
            .withNanoCPUs(spec.nanoCpus())
            .withPidsLimit(spec.pidsLimit())
            .withLogConfig(
                new LogConfig(LogConfig.LoggingType.JSON_FILE, ContainerSpec.LOG_OPTIONS));
    CreateContainerCmd create =
        client
            .createContainerCmd(spec.image())
            .withName(spec.name())
            .withCmd(spec.command())
            .withEnv(spec.envList())
            .withUser(spec.user())
            .withLabels(spec.labels())
            .withHostConfig(host);
    if (!spec.entrypoint().isEmpty()) {
      create.withEntrypoint(spec.entrypoint());
    }
    // The create call's NetworkingConfig: the endpoint on the network it is created on.
    spec.address().ifPresent(create::withIpv4Address);
    if (openStdin) {
      create.withStdinOpen(true).withStdInOnce(true);
    }
    return create.exec().getId();
  }
}
