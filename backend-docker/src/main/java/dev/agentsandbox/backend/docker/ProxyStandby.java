package dev.agentsandbox.backend.docker;

import com.github.dockerjava.api.DockerClient;
import dev.agentsandbox.backend.Labels;
import dev.agentsandbox.backend.SandboxException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;

/**
 * One entry of the {@link ProxyPool}: what a cold run creates before its workload — both tmpfs
 * volumes, the fence and egress networks, and the proxy container on both, listening on its fence
 * address only — created before any run exists ({@link FenceBuilder}), the proxy started
 * <em>awaiting its policy</em> ({@code AGENT_SANDBOX_PROXY_AWAIT}, stdin open): until a run's
 * policy is written to its standard input it refuses every request as {@code policy-pending}, and
 * those refusals are never recorded as a run's ({@link
 * HandOverListener#handOverDroppingPrePolicy}). Named and labelled with its own id ({@code sb-...},
 * never a run id), under the agent label {@value #AGENT_LABEL}. Serves one run ({@link
 * SandboxLauncher#onStandby}, after which the run's sandbox owns and removes everything), or is
 * destroyed unused.
 */
final class ProxyStandby implements ProxyPool.Standby {
  /** The agent label of a standby's objects: they belong to no agent yet. */
  static final String AGENT_LABEL = "proxy-pool";

  private final String id;
  private final Instant createdAt;
  private final SandboxObjects objects;
  private final HandOverListener listener;
  private final FenceBuilder.StartedProxy proxy;

  private ProxyStandby(
      String id,
      Instant createdAt,
      SandboxObjects objects,
      HandOverListener listener,
      FenceBuilder.StartedProxy proxy) {
    this.id = id;
    this.createdAt = createdAt;
    this.objects = objects;
    this.listener = listener;
    this.proxy = proxy;
  }

  /**
   * Creates a standby and waits (at most {@code readyTimeout}) for its proxy's awaiting line.
   *
   * @param expiresAt the expiry label of its objects: past it the reaper removes them whatever the
   *     control plane says, so it must cover the longest idle time plus the longest run
   * @throws dev.agentsandbox.backend.UnableToLaunchSandboxException naming the failed step; what it
   *     created is removed by then
   */
  static ProxyStandby create(
      DockerClient client,
      DockerBackendConfig config,
      SubnetAllocator subnets,
      String id,
      Instant createdAt,
      Instant expiresAt,
      Duration readyTimeout) {
    Map<String, String> labels =
        FenceLayout.labelled(config, Labels.forRun(id, AGENT_LABEL, expiresAt));
    SandboxObjects objects = new SandboxObjects(client, subnets, "proxy-pool standby " + id);
    HandOverListener listener = new HandOverListener();
    FenceBuilder.StartedProxy proxy =
        FenceBuilder.build(
            client,
            new FenceLayout(config, id, labels).standbyObjects(),
            readyTimeout,
            listener,
            objects,
            new LaunchSteps(objects));
    return new ProxyStandby(id, createdAt, objects, listener, proxy);
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
    return !proxy.output().hasEnded() && !proxy.output().isReady();
  }

  /** The standby's proxy, awaiting its policy. */
  FenceBuilder.StartedProxy proxy() {
    return proxy;
  }

  String proxyId() {
    return proxy.containerId();
  }

  String proxyAddress() {
    return proxy.address();
  }

  HandOverListener listener() {
    return listener;
  }

  /** What it created; a run taking it takes these over ({@link SandboxObjects#takeOver}). */
  SandboxObjects objects() {
    return objects;
  }

  /** The subnet blocks it holds (its networks'). */
  List<SubnetAllocator.Block> blocks() {
    return objects.blocks();
  }

  /**
   * Removes everything it created (for a standby no run took; after a take-over nothing is left to
   * remove here).
   *
   * @throws SandboxException naming what could not be removed
   */
  @Override
  public void destroy() {
    List<String> problems = objects.remove();
    if (!problems.isEmpty()) {
      throw new SandboxException(
          "removing proxy-pool standby " + id + ": " + String.join("; ", problems));
    }
  }
}
