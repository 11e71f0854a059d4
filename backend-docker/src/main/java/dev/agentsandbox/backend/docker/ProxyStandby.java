package dev.agentsandbox.backend.docker;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.model.ContainerNetwork;
import dev.agentsandbox.backend.Labels;
import dev.agentsandbox.backend.SandboxException;
import dev.agentsandbox.backend.UnableToLaunchSandboxException;
import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * One entry of the {@link ProxyPool}: what a cold run creates before its workload — both tmpfs
 * volumes, the fence and egress networks, and the proxy container on both — created before any run
 * exists, the proxy started <em>awaiting its policy</em> ({@code AGENT_SANDBOX_PROXY_AWAIT}, stdin
 * open): until a run's policy is written to its standard input it refuses every request as {@code
 * policy-pending}. Named and labelled with its own id ({@code sb-...}, never a run id), under the
 * agent label {@value #AGENT_LABEL}. Serves one run ({@link DockerSandbox#startOnStandby}, after
 * which the run's sandbox owns and removes everything), or is destroyed unused.
 */
final class ProxyStandby implements ProxyPool.Standby {
  /** The agent label of a standby's objects: they belong to no agent yet. */
  static final String AGENT_LABEL = "proxy-pool";

  private final DockerClient client;
  private final String id;
  private final Instant createdAt;
  private final SubnetAllocator subnets;
  private final List<String> networkIds = new CopyOnWriteArrayList<>();
  private final List<SubnetAllocator.Block> blocks = new CopyOnWriteArrayList<>();
  private final HandOverListener listener = new HandOverListener();
  private volatile String proxyId;
  private volatile ProxyOutput output;
  private volatile String proxyAddress;

  private ProxyStandby(DockerClient client, String id, Instant createdAt, SubnetAllocator subnets) {
    this.client = client;
    this.id = id;
    this.createdAt = createdAt;
    this.subnets = subnets;
  }

  /**
   * Creates a standby and waits (at most {@code readyTimeout}) for its proxy's awaiting line;
   * removes what it created and throws when anything fails.
   *
   * @param expiresAt the expiry label of its objects: past it the reaper removes them whatever the
   *     control plane says, so it must cover the longest idle time plus the longest run
   */
  static ProxyStandby create(
      DockerClient client,
      DockerBackendConfig config,
      SubnetAllocator subnets,
      String id,
      Instant createdAt,
      Instant expiresAt,
      Duration readyTimeout) {
    ProxyStandby standby = new ProxyStandby(client, id, createdAt, subnets);
    Map<String, String> labels =
        RunLayout.labelled(config, Labels.forRun(id, AGENT_LABEL, expiresAt));
    if (subnets != null) {
      standby.blocks.addAll(subnets.allocate(SubnetPool.BLOCKS_PER_RUN, id));
    }
    String step = "creating volume " + RunLayout.workspaceName(id);
    try {
      DockerCommands.createVolume(client, RunLayout.workspace(config, id, labels));
      step = "creating volume " + RunLayout.credentialsName(id);
      DockerCommands.createVolume(client, RunLayout.credentials(config, id, labels));
      step = "creating network " + RunLayout.fenceName(id);
      standby.networkIds.add(
          DockerSandbox.createNetwork(
              client, subnets, standby.blocks, RunLayout.fence(config, id, labels), 0, id));
      step = "creating network " + RunLayout.egressName(id);
      standby.networkIds.add(
          DockerSandbox.createNetwork(
              client, subnets, standby.blocks, RunLayout.egress(config, id, labels), 1, id));
      ContainerSpec proxy = RunLayout.awaitingProxy(config, id, labels);
      step = "creating proxy container " + proxy.name() + " from image " + proxy.image();
      standby.proxyId = DockerCommands.createContainer(client, proxy, true);
      step = "connecting proxy container " + proxy.name() + " to " + RunLayout.egressName(id);
      client
          .connectToNetworkCmd()
          .withNetworkId(RunLayout.egressName(id))
          .withContainerId(standby.proxyId)
          .exec();
      step = "starting proxy container " + proxy.name();
      client.startContainerCmd(standby.proxyId).exec();
      standby.output =
          client
              .logContainerCmd(standby.proxyId)
              .withFollowStream(true)
              .withStdOut(true)
              .withStdErr(true)
              .exec(new ProxyOutput(standby.listener));
      step = "waiting for proxy container " + proxy.name() + " to await its policy";
      if (!standby.output.awaitAwaiting(readyTimeout.toMillis())) {
        throw new SandboxException(
            "no awaiting line within "
                + readyTimeout.toSeconds()
                + " s; its last output: "
                + standby.output.lastErrors());
      }
      step = "reading the address of proxy container " + proxy.name();
      standby.proxyAddress = standby.addressOnFence();
      return standby;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      standby.destroyQuietly();
      throw new UnableToLaunchSandboxException(
          step + " for proxy-pool standby " + id + ": interrupted", e);
    } catch (RuntimeException e) {
      standby.destroyQuietly();
      throw new UnableToLaunchSandboxException(
          step + " for proxy-pool standby " + id + ": " + DockerErrors.describe(e), e);
    }
  }

  private String addressOnFence() {
    ContainerNetwork endpoint =
        client
            .inspectContainerCmd(proxyId)
            .exec()
            .getNetworkSettings()
            .getNetworks()
            .get(RunLayout.fenceName(id));
    if (endpoint == null || endpoint.getIpAddress() == null || endpoint.getIpAddress().isEmpty()) {
      throw new SandboxException("the proxy has no address on " + RunLayout.fenceName(id));
    }
    return endpoint.getIpAddress();
  }

  @Override
  public String id() {
    return id;
  }

  @Override
  public Instant createdAt() {
    return createdAt;
  }

  /**
   * Whether it can still serve a run: its proxy's output has not ended (the container runs) and it
   * never printed a ready line (it holds no policy: it has refused everything so far).
   */
  @Override
  public boolean usable() {
    ProxyOutput out = output;
    return out != null && !out.hasEnded() && !out.isReady();
  }

  String proxyId() {
    return proxyId;
  }

  String proxyName() {
    return RunLayout.proxyName(id);
  }

  String proxyAddress() {
    return proxyAddress;
  }

  ProxyOutput output() {
    return output;
  }

  HandOverListener listener() {
    return listener;
  }

  List<String> networkIds() {
    return List.copyOf(networkIds);
  }

  List<SubnetAllocator.Block> blocks() {
    return List.copyOf(blocks);
  }

  /** Removes everything it created (for a standby no run took). */
  @Override
  public void destroy() {
    List<String> problems = new ArrayList<>();
    ProxyOutput out = output;
    if (out != null) {
      try {
        out.close();
      } catch (IOException | RuntimeException ignored) {
        // Closing a stream that may have ended; nothing to recover.
      }
    }
    if (proxyId != null) {
      try {
        client.removeContainerCmd(proxyId).withForce(true).withRemoveVolumes(true).exec();
      } catch (RuntimeException e) {
        if (!DockerErrors.alreadyDone(e)) {
          problems.add("container " + proxyId + ": " + DockerErrors.describe(e));
        }
      }
    }
    for (String name : List.of(RunLayout.workspaceName(id), RunLayout.credentialsName(id))) {
      try {
        client.removeVolumeCmd(name).exec();
      } catch (RuntimeException e) {
        if (!DockerErrors.alreadyDone(e)) {
          problems.add("volume " + name + ": " + DockerErrors.describe(e));
        }
      }
    }
    for (String network : networkIds) {
      try {
        client.removeNetworkCmd(network).exec();
      } catch (RuntimeException e) {
        if (!DockerErrors.alreadyDone(e)) {
          problems.add("network " + network + ": " + DockerErrors.describe(e));
        }
      }
    }
    if (subnets != null) {
      blocks.forEach(subnets::release);
      blocks.clear();
    }
    if (!problems.isEmpty()) {
      throw new SandboxException(
          "removing proxy-pool standby " + id + ": " + String.join("; ", problems));
    }
  }

  private void destroyQuietly() {
    try {
      destroy();
    } catch (RuntimeException ignored) {
      // The creation error is the one to report; the reaper removes what is left by label.
    }
  }
}
