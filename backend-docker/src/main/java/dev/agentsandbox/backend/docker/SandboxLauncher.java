package dev.agentsandbox.backend.docker;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.async.ResultCallback;
import com.github.dockerjava.api.model.Frame;
import com.github.dockerjava.transport.DockerHttpClient;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.backend.SandboxListener;
import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one way a run's sandbox is built. Cold and on a proxy-pool standby differ only in where the
 * proxy comes from: a cold run creates its fence and starts its proxy with its policy ({@link
 * FenceBuilder}); a pooled run takes over a standby's fence and writes its policy to the standby's
 * awaiting proxy. After that both do the same: the {@link Delivery deliveries} (credentials, the
 * output folder) go in, the workload container is created, given the run CA's trust files when the
 * run inspects hosts (only ever cold: {@link DockerInspection}), and started. Every step is named
 * and a failing one removes everything ({@link LaunchSteps}). Thread-safe: each launch is its own.
 */
final class SandboxLauncher {
  private static final Logger LOG = LoggerFactory.getLogger(SandboxLauncher.class);

  private final DockerClient client;
  private final DockerHttpClient http;
  private final DockerBackendConfig config;
  private final SubnetAllocator subnets;

  SandboxLauncher(
      DockerClient client,
      DockerHttpClient http,
      DockerBackendConfig config,
      SubnetAllocator subnets) {
    this.client = client;
    this.http = http;
    this.config = config;
    this.subnets = subnets;
  }

  /** What became of a launch on a standby. */
  sealed interface OnStandby {
    /** The run's sandbox, built on the standby. */
    record Built(DockerSandbox sandbox) implements OnStandby {}

    /**
     * The standby's proxy did not take the run's policy (it stopped, or printed no ready line):
     * everything of the standby is removed, nothing of the run was created, and the run may be
     * built cold.
     *
     * @param why what the proxy did instead, for the log
     */
    record Unusable(String why) implements OnStandby {}
  }

  /**
   * Builds the run cold: its fence and proxy, then its workload.
   *
   * @throws dev.agentsandbox.backend.UnableToLaunchSandboxException naming the failed step; nothing
   *     is left
   */
  DockerSandbox cold(
      RunLayout layout, RunSpec spec, SandboxListener listener, Instant hardDeadline) {
    SandboxObjects objects = new SandboxObjects(client, subnets, "run " + spec.runId());
    LaunchSteps steps = new LaunchSteps(objects);
    FenceBuilder.StartedProxy proxy =
        FenceBuilder.build(
            client, layout.fenceObjects(), config.proxyReadyTimeout(), listener, objects, steps);
    return withWorkload(
        layout, spec, listener, hardDeadline, objects, steps, proxy, Optional.empty(), () -> {});
  }

  /**
   * Builds a sandbox on a proxy-pool standby when the pool has one, the run has no labels of its
   * own and inspects no host, else cold; {@code layoutOn} gives the layout on objects named after
   * an id (the run's own, or the standby's).
   */
  DockerSandbox onPoolOrCold(
      ProxyPool<ProxyStandby> pool,
      RunSpec spec,
      SandboxListener listener,
      Instant hardDeadline,
      java.util.function.Function<String, RunLayout> layoutOn) {
    // A run with labels of its own is built cold: they go on every object it has, and Docker
    // cannot add labels to a standby's objects that already exist.
    // So is a run that inspects hosts: its proxy's credentials and its trust volume are made with
    // the run (docs/backends/docker.md, "Inspected hosts").
    java.util.Optional<ProxyStandby> standby =
        spec.runLabels().isEmpty() && spec.egress().inspect().isEmpty()
            ? pool.take(spec.runId())
            : java.util.Optional.empty();
    if (standby.isPresent()) {
      ProxyStandby taken = standby.get();
      SandboxLauncher.OnStandby outcome =
          onStandby(
              layoutOn.apply(taken.id()),
              spec,
              taken,
              listener,
              hardDeadline,
              () -> pool.released(taken.id()));
      switch (outcome) {
        case SandboxLauncher.OnStandby.Built built -> {
          return built.sandbox();
        }
        case SandboxLauncher.OnStandby.Unusable unusable ->
            // Nothing of the run had been created; the standby was removed with what it held.
            LOG.warn(
                "run {}: proxy-pool standby {} did not take the run's policy, building the run"
                    + " cold: {}",
                spec.runId(),
                taken.id(),
                unusable.why());
      }
    }
    return cold(layoutOn.apply(spec.runId()), spec, listener, hardDeadline);
  }

  /**
   * Builds the run on {@code standby}: takes over its objects (from now on the run's teardown
   * removes them), writes the run's policy to its proxy's standard input over the Engine API's
   * attach and waits for the ready line, hands the proxy's decisions over to the run without the
   * refusals it made before any policy; then the workload, as {@link #cold} does.
   *
   * @param released run after the run's teardown (the pool forgets the standby)
   * @throws dev.agentsandbox.backend.UnableToLaunchSandboxException when a step after the policy
   *     failed; nothing is left
   */
  OnStandby onStandby(
      RunLayout layout,
      RunSpec spec,
      ProxyStandby standby,
      SandboxListener listener,
      Instant hardDeadline,
      Runnable released) {
    SandboxObjects objects = new SandboxObjects(client, subnets, "run " + spec.runId());
    objects.takeOver(standby.objects());
    LaunchSteps steps = new LaunchSteps(objects);
    FenceBuilder.StartedProxy proxy = standby.proxy();
    try {
      Optional<String> refused = writePolicy(layout, standby, steps, objects);
      if (refused.isPresent()) {
        java.util.List<String> left = objects.remove();
        released.run();
        return new OnStandby.Unusable(
            refused.get() + (left.isEmpty() ? "" : "; left for the reaper: " + left));
      }
      long dropped = standby.listener().handOverDroppingPrePolicy(listener);
      if (dropped > 0) {
        LOG.warn(
            "run {}: {} request(s) reached proxy-pool standby {} before any run took it; each was"
                + " refused (policy-pending) and none is recorded as the run's",
            spec.runId(),
            dropped,
            standby.id());
      }
      return new OnStandby.Built(
          withWorkload(
              layout,
              spec,
              listener,
              hardDeadline,
              objects,
              steps,
              proxy,
              Optional.of(standby.id()),
              released));
    } catch (dev.agentsandbox.backend.UnableToLaunchSandboxException e) {
      // The steps removed the standby's objects with the run's; the pool forgets the standby.
      released.run();
      throw e;
    }
  }

  /**
   * Writes the run's policy to the standby's proxy and waits for its ready line. Empty when the
   * proxy took it; else why not, when the proxy was gone or did not take it: the cases in which the
   * standby, not the run, is the problem. Any other failure of the daemon fails the launch.
   */
  private Optional<String> writePolicy(
      RunLayout layout, ProxyStandby standby, LaunchSteps steps, SandboxObjects objects) {
    byte[] policy =
        layout.proxyPolicyJson(standby.proxy().address()).getBytes(StandardCharsets.UTF_8);
    String proxyId = standby.proxy().containerId();
    ResultCallback.Adapter<Frame> attached;
    try {
      attached =
          client
              .attachContainerCmd(proxyId)
              .withStdIn(new ByteArrayInputStream(policy))
              .withFollowStream(true)
              .exec(new ResultCallback.Adapter<>());
    } catch (RuntimeException e) {
      if (DockerErrors.alreadyDone(e)) {
        return Optional.of("attaching to its proxy: " + DockerErrors.describe(e));
      }
      throw steps.fail(
          "writing the run's policy to pooled proxy " + standby.proxy().name(),
          DockerErrors.describe(e));
    }
    try {
      boolean ready =
          steps.step(
              "waiting for pooled proxy " + standby.proxy().name() + " to apply the run's policy",
              () -> standby.proxy().output().awaitReady(config.proxyReadyTimeout().toMillis()));
      return ready
          ? Optional.empty()
          : Optional.of(
              "no ready line within "
                  + config.proxyReadyTimeout().toSeconds()
                  + " s; its last output: "
                  + standby.proxy().output().lastErrors());
    } finally {
      // The policy is read; closing the attach closes the proxy's stdin (StdinOnce).
      SandboxObjects.close(attached, objects.owner(), "the attach to its pooled proxy");
    }
  }

  /** The deliveries, then the workload container, created, filled and started. */
  private DockerSandbox withWorkload(
      RunLayout layout,
      RunSpec spec,
      SandboxListener listener,
      Instant hardDeadline,
      SandboxObjects objects,
      LaunchSteps steps,
      FenceBuilder.StartedProxy proxy,
      Optional<String> pooled,
      Runnable afterTeardown) {
    for (Delivery delivery : layout.deliveries()) {
      if (delivery.through() == Delivery.Through.PROXY) {
        steps.run(delivery.step(), () -> copyInto(proxy.containerId(), delivery));
      }
    }
    layout
        .runnerVolume()
        .ifPresent(
            volume -> {
              objects.volume(volume.name());
              steps.step(
                  "creating volume " + volume.name(),
                  () -> DockerCommands.createVolume(client, volume));
            });
    ContainerSpec agent = layout.agent(proxy.address());
    String agentId =
        steps.step(
            "creating workload container " + agent.name() + " from image " + agent.image(),
            () -> DockerCommands.createContainer(client, agent));
    objects.container(agentId);
    String imageId =
        steps.step(
            "reading the image id of workload container " + agent.name(),
            () -> client.inspectContainerCmd(agentId).exec().getImageId());
    for (Delivery delivery : layout.deliveries()) {
      if (delivery.through() == Delivery.Through.WORKLOAD) {
        steps.run(delivery.step(), () -> copyInto(agentId, delivery));
      }
    }
    if (layout.inspects()) {
      // The run CA joined to the image's own bundle: read from the created workload container.
      String name = "giving workload container " + agent.name() + " the run CA's certificate";
      Delivery trust =
          steps.step(
              name, () -> DockerInspection.trustDelivery(client, agentId, proxy.output(), name));
      steps.run(trust.step(), () -> copyInto(proxy.containerId(), trust));
    }
    steps.run(
        "starting workload container " + agent.name() + " under " + layout.runtime(),
        () -> client.startContainerCmd(agentId).exec());
    WorkloadOutput output =
        steps.step(
            "following the output of workload container " + agent.name(),
            () -> FenceBuilder.follow(client, agentId, new WorkloadOutput(listener), objects));
    return new DockerSandbox(
        client,
        spec.runId(),
        layout.runtime(),
        objects,
        proxy,
        new DockerSandbox.Workload(agentId, agent.name(), imageId, output),
        new OutputArchive(http, spec.runId(), spec.outputs()),
        hardDeadline,
        pooled,
        afterTeardown);
  }

  /** Extracts a delivery's archive into {@code containerId}. */
  void copyInto(String containerId, Delivery delivery) {
    client
        .copyArchiveToContainerCmd(containerId)
        .withRemotePath(delivery.path())
        .withTarInputStream(new ByteArrayInputStream(delivery.tar()))
        .withNoOverwriteDirNonDir(true)
        .exec();
  }
}
