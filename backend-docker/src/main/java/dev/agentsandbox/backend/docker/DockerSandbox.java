package dev.agentsandbox.backend.docker;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.async.ResultCallback;
import com.github.dockerjava.api.command.InspectContainerResponse;
import com.github.dockerjava.api.model.ContainerNetwork;
import com.github.dockerjava.api.model.WaitResponse;
import dev.agentsandbox.backend.Completion;
import dev.agentsandbox.backend.RunContract;
import dev.agentsandbox.backend.Sandbox;
import dev.agentsandbox.backend.SandboxException;
import dev.agentsandbox.backend.SandboxListener;
import dev.agentsandbox.backend.UnableToLaunchSandboxException;
import dev.agentsandbox.backend.UnableToTearDownSandboxException;
import java.io.ByteArrayInputStream;
import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One run's volumes, containers and networks on a Docker daemon. Created by {@link
 * DockerBackend#launch}, which calls {@link #start}; thread-safe as {@link Sandbox} requires.
 */
final class DockerSandbox implements Sandbox {
  /** How long the workload's and the proxy's output may take to drain once they stopped. */
  private static final long DRAIN_MILLIS = 10_000;

  /** How long the workload's wait may take to say why, once the proxy's wait broke. */
  private static final long PROXY_WAIT_BROKE_MILLIS = 10_000;

  /** How long (in 100 ms polls) a workload stopped by a signal waits to see its proxy stop too. */
  private static final int OUTSIDE_STOP_POLLS = 30;

  private final DockerClient client;
  private final RunLayout layout;
  private final String runId;
  private final String runtime;
  private final SandboxListener listener;
  private final Instant hardDeadline;
  private final AtomicBoolean killed = new AtomicBoolean();
  private final List<String> containers = new CopyOnWriteArrayList<>();
  private final List<String> networks = new CopyOnWriteArrayList<>();
  private final SubnetAllocator subnets;
  private final List<SubnetAllocator.Block> blocks = new CopyOnWriteArrayList<>();
  private final List<Closeable> streams = new CopyOnWriteArrayList<>();
  private volatile String agentId;
  private volatile String imageId;
  private volatile String proxyId;
  private volatile WorkloadOutput agentOutput;
  private volatile ProxyOutput proxyOutput;
  private volatile String proxyAddress;
  private volatile Path collected;
  private volatile String outputsProblem;
  private volatile String standbyId;
  private volatile Runnable afterTeardown;

  DockerSandbox(
      DockerClient client,
      RunLayout layout,
      String runId,
      String runtime,
      SandboxListener listener,
      Instant hardDeadline,
      SubnetAllocator subnets) {
    this.client = client;
    this.subnets = subnets;
    this.layout = layout;
    this.runId = runId;
    this.runtime = runtime;
    this.listener = listener;
    this.hardDeadline = hardDeadline;
  }

  /**
   * Creates the volumes, the fence, the proxy and the workload, in that order, delivering the
   * credentials and the empty output folder before the workload starts; removes all on failure.
   */
  void start(Duration proxyReadyTimeout) {
    if (subnets != null) {
      // Both blocks before anything is created: an exhausted pool refuses the run cleanly.
      blocks.addAll(subnets.allocate(SubnetPool.BLOCKS_PER_RUN, runId));
    }
    String[] step = {"creating volume " + layout.workspaceName()};
    try {
      DockerCommands.createVolume(client, layout.workspace());
      step[0] = "creating volume " + layout.credentialsName();
      DockerCommands.createVolume(client, layout.credentials());
      if (layout.inspects()) {
        step[0] = "creating volume " + layout.trustName();
        DockerCommands.createVolume(client, layout.trust());
      }
      step[0] = "creating network " + layout.fenceName();
      networks.add(createNetwork(layout.fence(), 0));
      step[0] = "creating network " + layout.egressName();
      networks.add(createNetwork(layout.egress(), 1));

      ContainerSpec proxy = layout.proxy();
      step[0] = "creating proxy container " + proxy.name() + " from image " + proxy.image();
      proxyId = DockerCommands.createContainer(client, proxy);
      containers.add(proxyId);
      step[0] = "connecting proxy container " + proxy.name() + " to " + layout.egressName();
      client
          .connectToNetworkCmd()
          .withNetworkId(layout.egressName())
          .withContainerId(proxyId)
          .exec();
      step[0] = "starting proxy container " + proxy.name();
      client.startContainerCmd(proxyId).exec();
      proxyOutput = follow(proxyId, new ProxyOutput(listener));
      step[0] = "waiting for proxy container " + proxy.name() + " to listen";
      if (!proxyOutput.awaitReady(proxyReadyTimeout.toMillis())) {
        throw new SandboxException(
            "no ready line within "
                + proxyReadyTimeout.toSeconds()
                + " s; its last output: "
                + proxyOutput.lastErrors());
      }
      proxyAddress = addressOn(proxyId, layout.fenceName());
      startWorkload(step);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      teardownQuietly();
      throw new UnableToLaunchSandboxException(step[0] + " for run " + runId + ": interrupted", e);
    } catch (RuntimeException e) {
      teardownQuietly();
      throw new UnableToLaunchSandboxException(
          step[0] + " for run " + runId + ": " + DockerErrors.describe(e) + hint(e), e);
    }
  }

  /**
   * Builds the run on a proxy-pool standby: takes over its volumes, networks and awaiting proxy
   * (from now on this sandbox's teardown removes them), hands the proxy's output to this run's
   * listener, writes the run's policy to the proxy's standard input over the Engine API's attach
   * and waits for its ready line; then delivers the credentials and creates and starts the workload
   * as {@link #start} does. Removes all on failure.
   *
   * @throws StandbyFailedException when the standby's proxy did not take the policy (gone, or no
   *     ready line): everything is removed, and the caller may build the run cold instead
   */
  void startOnStandby(ProxyStandby standby, Duration proxyReadyTimeout) {
    if (!layout.pooled()) {
      throw new IllegalStateException("run " + runId + " was not laid out on a standby");
    }
    standbyId = standby.id();
    containers.add(standby.proxyId());
    networks.addAll(standby.networkIds());
    blocks.addAll(standby.blocks());
    streams.add(standby.output());
    proxyId = standby.proxyId();
    proxyOutput = standby.output();
    proxyAddress = standby.proxyAddress();
    standby.listener().handOver(listener);
    String[] step = {"writing the run's policy to pooled proxy " + standby.proxyName()};
    try {
      byte[] policy = layout.proxyPolicyJson().getBytes(java.nio.charset.StandardCharsets.UTF_8);
      try (ResultCallback.Adapter<com.github.dockerjava.api.model.Frame> attached =
          client
              .attachContainerCmd(proxyId)
              .withStdIn(new ByteArrayInputStream(policy))
              .withFollowStream(true)
              .exec(new ResultCallback.Adapter<>())) {
        step[0] = "waiting for pooled proxy " + standby.proxyName() + " to apply the run's policy";
        if (!proxyOutput.awaitReady(proxyReadyTimeout.toMillis())) {
          throw new SandboxException(
              "no ready line within "
                  + proxyReadyTimeout.toSeconds()
                  + " s; its last output: "
                  + proxyOutput.lastErrors());
        }
      } catch (java.io.IOException e) {
        // Closing the attach after the ready line: the policy is applied, nothing to undo.
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      teardownQuietly();
      throw new UnableToLaunchSandboxException(step[0] + " for run " + runId + ": interrupted", e);
    } catch (RuntimeException e) {
      teardownQuietly();
      throw new StandbyFailedException(
          step[0] + " for run " + runId + ": " + DockerErrors.describe(e), e);
    }
    try {
      startWorkload(step);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      teardownQuietly();
      throw new UnableToLaunchSandboxException(step[0] + " for run " + runId + ": interrupted", e);
    } catch (RuntimeException e) {
      teardownQuietly();
      throw new UnableToLaunchSandboxException(
          step[0] + " for run " + runId + ": " + DockerErrors.describe(e) + hint(e), e);
    }
  }

  /** A standby's proxy that did not take its run's policy; nothing of the run was created. */
  static final class StandbyFailedException extends UnableToLaunchSandboxException {
    StandbyFailedException(String message, Throwable cause) {
      super(message, cause);
    }
  }

  /** Copies the credentials in, then creates, fills and starts the workload container. */
  private void startWorkload(String[] step) throws InterruptedException {
    // The workload mounts the credentials read-only and Docker refuses to copy into a read-only
    // mount, so they go in through the proxy's writable mount of the same volume.
    step[0] = "copying the run's credentials into volume " + layout.credentialsName();
    copyInto(proxyId, RunLayout.PROXY_CREDENTIALS, layout.credentialsArchive());

    ContainerSpec agent = layout.agent(proxyAddress);
    step[0] = "creating workload container " + agent.name() + " from image " + agent.image();
    agentId = DockerCommands.createContainer(client, agent);
    containers.add(agentId);
    step[0] = "reading the image id of workload container " + agent.name();
    imageId = client.inspectContainerCmd(agentId).exec().getImageId();
    step[0] = "creating " + RunContract.OUT_DIR + " in workload container " + agent.name();
    copyInto(agentId, RunContract.WORKSPACE, layout.outFolderArchive());
    if (layout.inspects()) {
      step[0] = "giving workload container " + agent.name() + " the run CA's certificate";
      String caPem =
          proxyOutput
              .caCertificate()
              .orElseThrow(
                  () ->
                      new SandboxException(
                          "the proxy inspects hosts but announced no CA certificate before its"
                              + " ready line (is the proxy image older than inspection?"
                              + " images/build.sh proxy builds it)"));
      copyInto(
          proxyId,
          DockerInspection.PROXY_TRUST,
          DockerInspection.trustArchive(client, agentId, caPem));
    }
    step[0] = "starting workload container " + agent.name() + " under " + runtime;
    client.startContainerCmd(agentId).exec();
    agentOutput = follow(agentId, new WorkloadOutput(listener));
  }

  /** How many blocks one network may try when the daemon refuses them as overlapping. */
  private static final int OVERLAP_ATTEMPTS = 8;

  /**
   * Creates a network, in this run's {@code slot}-th block of the subnet pool when there is one;
   * when the daemon refuses the block as overlapping a network the allocator did not see (another
   * control plane on the same range), sets it aside and tries the next free one, a bounded number
   * of times.
   */
  private String createNetwork(NetworkSpec spec, int slot) {
    return createNetwork(client, subnets, blocks, spec, slot, runId);
  }

  /**
   * {@link #createNetwork(NetworkSpec, int)} for any owner of {@code blocks} (a run, or a
   * proxy-pool standby); {@code subnets} null means Docker's default address pools.
   */
  static String createNetwork(
      DockerClient client,
      SubnetAllocator subnets,
      List<SubnetAllocator.Block> blocks,
      NetworkSpec spec,
      int slot,
      String owner) {
    if (subnets == null) {
      return DockerCommands.createNetwork(client, spec, null);
    }
    for (int attempt = 1; ; attempt++) {
      SubnetAllocator.Block block = blocks.get(slot);
      try {
        return DockerCommands.createNetwork(client, spec, block);
      } catch (RuntimeException e) {
        if (!DockerErrors.subnetTaken(e) || attempt == OVERLAP_ATTEMPTS) {
          throw e;
        }
        subnets.refused(block);
        blocks.set(slot, subnets.allocate(1, owner).get(0));
      }
    }
  }

  void copyInto(String containerId, String path, byte[] tar) {
    client
        .copyArchiveToContainerCmd(containerId)
        .withRemotePath(path)
        .withTarInputStream(new ByteArrayInputStream(tar))
        .withNoOverwriteDirNonDir(true)
        .exec();
  }

  /**
   * Reads the stopped workload's {@link RunContract#OUT_DIR} through the daemon's archive API into
   * a private temporary file, while the proxy still holds the workspace volume mounted (stopping
   * the proxy unmounts the tmpfs and loses it). At most the workspace's size.
   */
  private synchronized void collectOutputs() {
    if (agentId == null || collected != null) {
      return;
    }
    try {
      Path file = Files.createTempFile("asb-" + runId + "-out", ".tar");
      collected = file;
      try (InputStream in =
          client.copyArchiveFromContainerCmd(agentId, RunContract.OUT_DIR).exec()) {
        Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
      }
    } catch (IOException | RuntimeException e) {
      outputsProblem =
          "reading "
              + RunContract.OUT_DIR
              + " of run "
              + runId
              + ": "
              + (e instanceof RuntimeException r ? DockerErrors.describe(r) : e.getMessage())
              + " (did the workload remove the folder?)";
    }
  }

  /**
   * The workload's {@link RunContract#OUT_DIR} as collected when it stopped ({@link #await}; read
   * now if it was not): a tar whose top folder is {@code out}.
   */
  @Override
  public Optional<InputStream> outputs() {
    collectOutputs();
    if (outputsProblem != null) {
      throw new SandboxException(outputsProblem);
    }
    if (collected == null) {
      return Optional.empty();
    }
    try {
      return Optional.of(Files.newInputStream(collected));
    } catch (IOException e) {
      throw new SandboxException(
          "reading the collected outputs of run " + runId + ": " + e.getMessage(), e);
    }
  }

  private static String hint(RuntimeException e) {
    String text = DockerErrors.describe(e);
    if (text.contains("No such image")) {
      return " (images are not pulled: build them with images/build.sh or load them first)";
    }
    if (text.contains("unknown or invalid runtime")) {
      return " (register it with scripts/install-host.sh)";
    }
    return "";
  }

  private <T extends ResultCallback.Adapter<com.github.dockerjava.api.model.Frame>> T follow(
      String containerId, T callback) {
    T started =
        client
            .logContainerCmd(containerId)
            .withFollowStream(true)
            .withStdOut(true)
            .withStdErr(true)
            .exec(callback);
    streams.add(started);
    return started;
  }

  private String addressOn(String containerId, String network) {
    ContainerNetwork endpoint =
        client
            .inspectContainerCmd(containerId)
            .exec()
            .getNetworkSettings()
            .getNetworks()
            .get(network);
    if (endpoint == null || endpoint.getIpAddress() == null || endpoint.getIpAddress().isEmpty()) {
      throw new SandboxException("the proxy has no address on " + network);
    }
    return endpoint.getIpAddress();
  }

  /** The workload container's id, for operators and tests that look inside the sandbox. */
  String workloadContainerId() {
    return agentId;
  }

  /** The proxy container's id. */
  String proxyContainerId() {
    return proxyId;
  }

  /** The proxy's address on the private network, once it started. */
  String proxyAddress() {
    return proxyAddress;
  }

  @Override
  public String runId() {
    return runId;
  }

  @Override
  public String runtime() {
    return runtime;
  }

  @Override
  public Optional<String> imageId() {
    return Optional.ofNullable(imageId);
  }

  @Override
  public Optional<String> pooledProxy() {
    return Optional.ofNullable(standbyId);
  }

  /** Runs {@code action} after each teardown (the proxy pool forgets the standby it took). */
  void afterTeardown(Runnable action) {
    afterTeardown = action;
  }

  @Override
  public Completion await(Instant deadline) throws InterruptedException {
    try {
      return awaitEither(deadline);
    } catch (RuntimeException e) {
      if (daemonAnswers()) {
        throw e;
      }
      // Without live-restore a stopping daemon stops every container with it: the run is over.
      throw new SandboxException(
          "the Docker daemon went away during the run (stopped or restarted; it stops the run's"
              + " containers with it, and the reaper removes what is left once it is back): "
              + DockerErrors.describe(e),
          e);
    }
  }

  private boolean daemonAnswers() {
    try {
      client.pingCmd().exec();
      return true;
    } catch (RuntimeException e) {
      return false;
    }
  }

  private Completion awaitEither(Instant deadline) throws InterruptedException {
    Instant until = deadline.isBefore(hardDeadline) ? deadline : hardDeadline;
    // Whichever stops first: the workload, or the proxy it needs (killed, crashed, out of memory).
    CountDownLatch stopped = new CountDownLatch(1);
    Stopped wait = client.waitContainerCmd(agentId).exec(new Stopped(stopped));
    Stopped proxyWait =
        proxyId == null ? null : client.waitContainerCmd(proxyId).exec(new Stopped(stopped));
    boolean ended;
    boolean proxyStopped = false;
    try {
      long millis = Duration.between(Instant.now(), until).toMillis();
      boolean any = millis > 0 && stopped.await(millis, TimeUnit.MILLISECONDS);
      // Throws what broke the workload's wait (the daemon gone, say).
      ended = any && wait.awaitCompletion(0, TimeUnit.MILLISECONDS);
      if (any && !ended) {
        if (proxyWait != null && proxyWait.completedWithoutError() && workloadRunning()) {
          proxyStopped = true;
        } else {
          // The proxy's wait broke, or the workload stopped too (a daemon stopping stops both):
          // the workload's own wait, given a moment, says what happened.
          ended = wait.awaitCompletion(PROXY_WAIT_BROKE_MILLIS, TimeUnit.MILLISECONDS);
          if (!ended) {
            throw new SandboxException(
                "waiting for the proxy container of run "
                    + runId
                    + " failed; the workload's state is unknown");
          }
        }
      }
    } finally {
      closeQuietly(wait);
      if (proxyWait != null) {
        closeQuietly(proxyWait);
      }
    }
    if (!ended) {
      killContainer(agentId);
    }
    OptionalInt status = exitStatusOnceStopped();
    if (proxyStopped) {
      return proxyDied(status);
    }
    if (ended && stoppedFromOutside(status)) {
      collectOutputs();
      drain();
      return new Completion(
          Completion.End.ERROR,
          status,
          "the workload and its proxy were stopped together from outside the control plane"
              + " (workload "
              + exitDetail(status.getAsInt())
              + "): the Docker daemon stopping or restarting (without live-restore it stops every"
              + " container), or someone stopping the sandbox's containers by hand");
    }
    return ended(ended, status, until);
  }

  /**
   * Whether a workload that ended by SIGTERM or SIGKILL, which this control plane did not send, was
   * stopped together with its proxy: what a stopping daemon does (it answers its API while it stops
   * the containers, then goes). A workload that signals itself, or the OOM killer, leaves the proxy
   * running. Waits (bounded) for the proxy, since the daemon stops both at about the same moment.
   */
  private boolean stoppedFromOutside(OptionalInt status) throws InterruptedException {
    if (killed.get()
        || proxyId == null
        || status.isEmpty()
        || (status.getAsInt() != 143 && status.getAsInt() != 137)) {
      return false;
    }
    for (int i = 0; i < OUTSIDE_STOP_POLLS; i++) {
      if (!proxyRunning() || !daemonAnswers()) {
        return true;
      }
      Thread.sleep(100);
    }
    return false;
  }

  private boolean workloadRunning() {
    try {
      return Boolean.TRUE.equals(
          client.inspectContainerCmd(agentId).exec().getState().getRunning());
    } catch (RuntimeException e) {
      return false;
    }
  }

  /** Counts down a latch shared by the two waits when its container stops (or the wait breaks). */
  private static final class Stopped extends ResultCallback.Adapter<WaitResponse> {
    private final CountDownLatch latch;
    private volatile boolean failed;

    Stopped(CountDownLatch latch) {
      this.latch = latch;
    }

    @Override
    public void onError(Throwable throwable) {
      failed = true;
      super.onError(throwable);
      latch.countDown();
    }

    @Override
    public void onComplete() {
      super.onComplete();
      latch.countDown();
    }

    boolean completedWithoutError() throws InterruptedException {
      return !failed && awaitCompletionQuietly();
    }

    private boolean awaitCompletionQuietly() throws InterruptedException {
      try {
        return awaitCompletion(0, TimeUnit.MILLISECONDS) && !failed;
      } catch (RuntimeException e) {
        return false;
      }
    }
  }

  /**
   * Whether the proxy container is still running, for a workload that is not a container of its own
   * (a warm sandbox's exec). A proxy that cannot be inspected is gone.
   */
  boolean proxyRunning() {
    if (proxyId == null) {
      return true;
    }
    try {
      return Boolean.TRUE.equals(
          client.inspectContainerCmd(proxyId).exec().getState().getRunning());
    } catch (RuntimeException e) {
      return !(e instanceof com.github.dockerjava.api.exception.NotFoundException);
    }
  }

  /**
   * The run's proxy stopped while its workload still ran: the workload has been stopped (its egress
   * had no way out any more, and no decision could be recorded), its outputs are collected, and the
   * run ends as {@link Completion.End#PROXY_DIED}, unless an operator's kill came first.
   */
  Completion proxyDied(OptionalInt status) throws InterruptedException {
    String proxyState = describeProxyState();
    collectOutputs();
    drain();
    if (killed.get()) {
      return new Completion(Completion.End.KILLED, status, "killed on request");
    }
    return new Completion(
        Completion.End.PROXY_DIED,
        status,
        "the run's egress proxy stopped while the workload ran ("
            + proxyState
            + "); the workload was stopped");
  }

  private String describeProxyState() {
    try {
      InspectContainerResponse.ContainerState state =
          client.inspectContainerCmd(proxyId).exec().getState();
      StringBuilder text = new StringBuilder("proxy container exited");
      if (state.getExitCodeLong() != null) {
        text.append(" with status ").append(state.getExitCodeLong());
      }
      if (Boolean.TRUE.equals(state.getOOMKilled())) {
        text.append(", out of memory");
      }
      return text.toString();
    } catch (RuntimeException e) {
      return "proxy container gone: " + DockerErrors.describe(e);
    }
  }

  /**
   * Stops the workload container (whatever still runs in it) and waits, bounded, until it has; for
   * a workload whose command ran beside the container's own idle process.
   */
  void stopWorkload() throws InterruptedException {
    killContainer(agentId);
    exitStatusOnceStopped();
  }

  /**
   * How the stopped workload ended, after its outputs are collected and the proxy's last decisions
   * drained: {@code ended} says whether it ended before {@code until}, {@code status} is its exit
   * status.
   */
  Completion ended(boolean ended, OptionalInt status, Instant until) throws InterruptedException {
    collectOutputs();
    drain();
    if (killed.get()) {
      return new Completion(Completion.End.KILLED, status, "killed on request");
    }
    if (!ended) {
      return new Completion(Completion.End.DEADLINE, status, "killed at the deadline " + until);
    }
    if (status.isEmpty()) {
      return new Completion(
          Completion.End.ERROR, status, "the workload container vanished before it exited");
    }
    return new Completion(Completion.End.EXIT, status, exitDetail(status.getAsInt()));
  }

  private static String exitDetail(int status) {
    // 137 = 128 + SIGKILL: the kernel's (or gVisor's) OOM killer, since no one else sent it.
    return status == 137
        ? "exited with status 137 (killed: out of memory?)"
        : "exited with status " + status;
  }

  /** The workload's exit status, waiting (bounded) for a kill to take effect. */
  private OptionalInt exitStatusOnceStopped() throws InterruptedException {
    for (int i = 0; i < 100; i++) {
      InspectContainerResponse.ContainerState state;
      try {
        state = client.inspectContainerCmd(agentId).exec().getState();
      } catch (RuntimeException e) {
        return OptionalInt.empty();
      }
      if (!Boolean.TRUE.equals(state.getRunning())) {
        Long code = state.getExitCodeLong();
        return code == null ? OptionalInt.empty() : OptionalInt.of(code.intValue());
      }
      Thread.sleep(100);
    }
    return OptionalInt.empty();
  }

  /** Lets the output streams end, stopping the proxy so that its last decisions are written. */
  private void drain() throws InterruptedException {
    if (agentOutput != null) {
      agentOutput.awaitCompletion(DRAIN_MILLIS, TimeUnit.MILLISECONDS);
    }
    if (proxyId != null) {
      try {
        client.stopContainerCmd(proxyId).withTimeout(2).exec();
      } catch (RuntimeException e) {
        if (!DockerErrors.alreadyDone(e)) {
          throw new SandboxException(
              "stopping the proxy of run " + runId + ": " + DockerErrors.describe(e), e);
        }
      }
    }
    if (proxyOutput != null) {
      proxyOutput.awaitCompletion(DRAIN_MILLIS, TimeUnit.MILLISECONDS);
    }
  }

  @Override
  public void kill() {
    killed.set(true);
    if (agentId != null) {
      killContainer(agentId);
    }
  }

  private void killContainer(String id) {
    try {
      client.killContainerCmd(id).exec();
    } catch (RuntimeException e) {
      if (!DockerErrors.alreadyDone(e)) {
        throw new SandboxException(
            "killing container " + id + " of run " + runId + ": " + DockerErrors.describe(e), e);
      }
    }
  }

  @Override
  public void teardown() {
    try {
      removeAll();
    } finally {
      Runnable after = afterTeardown;
      if (after != null) {
        after.run();
      }
    }
  }

  private void removeAll() {
    List<String> problems = new ArrayList<>();
    streams.forEach(DockerSandbox::closeQuietly);
    for (String id : List.copyOf(containers)) {
      try {
        client.removeContainerCmd(id).withForce(true).withRemoveVolumes(true).exec();
      } catch (RuntimeException e) {
        if (!DockerErrors.alreadyDone(e)) {
          problems.add("container " + id + ": " + DockerErrors.describe(e));
        }
      }
    }
    // Both names, not only the volumes created: a launch cut short may have created one unseen.
    List<String> volumes =
        new java.util.ArrayList<>(List.of(layout.workspaceName(), layout.credentialsName()));
    if (layout.inspects()) {
      volumes.add(layout.trustName());
    }
    for (String name : volumes) {
      try {
        client.removeVolumeCmd(name).exec();
      } catch (RuntimeException e) {
        if (!DockerErrors.alreadyDone(e)) {
          problems.add("volume " + name + ": " + DockerErrors.describe(e));
        }
      }
    }
    for (String id : List.copyOf(networks)) {
      try {
        client.removeNetworkCmd(id).exec();
      } catch (RuntimeException e) {
        if (!DockerErrors.alreadyDone(e)) {
          problems.add("network " + id + ": " + DockerErrors.describe(e));
        }
      }
    }
    if (subnets != null) {
      // Released even when a removal failed: the allocator reads the daemon's networks on every
      // allocation, so a network still there keeps its block out of use until it is gone.
      blocks.forEach(subnets::release);
      blocks.clear();
    }
    Path file = collected;
    if (file != null) {
      try {
        Files.deleteIfExists(file);
      } catch (IOException e) {
        problems.add("collected outputs " + file + ": " + e.getMessage());
      }
    }
    UnableToTearDownSandboxException.throwIfAny("removing the sandbox of run " + runId, problems);
  }

  private void teardownQuietly() {
    try {
      teardown();
    } catch (RuntimeException ignored) {
      // The launch error is the one to report; the reaper removes what is left by label.
    }
  }

  private static void closeQuietly(Closeable closeable) {
    try {
      closeable.close();
    } catch (IOException | RuntimeException ignored) {
      // Closing a finished stream; nothing to recover.
    }
  }
}
