package dev.agentsandbox.backend.microvm;

import dev.agentsandbox.backend.Completion;
import dev.agentsandbox.backend.Sandbox;
import dev.agentsandbox.backend.SandboxException;
import dev.agentsandbox.backend.SandboxListener;
import dev.agentsandbox.backend.UnableToLaunchSandboxException;
import dev.agentsandbox.backend.UnableToTearDownSandboxException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One run's VM, tap, fence elements, proxy and files. Created by {@link MicroVmBackend#launch},
 * which calls {@link #start}; thread-safe as {@link Sandbox} requires.
 */
final class MicroVmSandbox implements Sandbox {
  private static final long DRAIN_MILLIS = 10_000;

  /**
   * How long a guest asked to stop (its deadline, a kill) may take to write its outputs and end
   * before its VMM is killed. The workload itself is killed at once; this bounds only the archive
   * of {@code /workspace/out}, the disk flush and the reset.
   */
  static final Duration STOP_GRACE = Duration.ofSeconds(30);

  private static final System.Logger LOG = System.getLogger(MicroVmSandbox.class.getName());

  private final MicroVmBackend backend;
  private final VmLayout layout;
  private final String runId;
  private final String runtime;
  private final SandboxListener listener;
  private final Instant hardDeadline;
  private final Duration bootTimeout;
  private final String imageId;
  private final AtomicBoolean killed = new AtomicBoolean();
  private final AtomicBoolean tornDown = new AtomicBoolean();
  private final GuestStatus status = new GuestStatus();
  private volatile boolean dirCreated;
  private volatile boolean tapCreated;
  private volatile boolean elementsAdded;
  private volatile ProxyProcess proxy;
  private volatile GuestChannel output;
  private volatile GuestChannel statusChannel;
  private volatile GuestChannel control;
  private volatile Process vm;
  private volatile Instant started;
  private volatile String failure;
  private final GuestControlPort port;

  MicroVmSandbox(
      MicroVmBackend backend,
      VmLayout layout,
      String runId,
      String runtime,
      SandboxListener listener,
      Instant hardDeadline,
      Duration bootTimeout,
      String imageId) {
    this(
        backend,
        layout,
        runId,
        runtime,
        listener,
        hardDeadline,
        bootTimeout,
        imageId,
        GuestControlPort.ONE_SHOT);
  }

  MicroVmSandbox(
      MicroVmBackend backend,
      VmLayout layout,
      String runId,
      String runtime,
      SandboxListener listener,
      Instant hardDeadline,
      Duration bootTimeout,
      String imageId,
      GuestControlPort port) {
    this.port = port;
    this.backend = backend;
    this.layout = layout;
    this.runId = runId;
    this.runtime = runtime;
    this.listener = listener;
    this.hardDeadline = hardDeadline;
    this.bootTimeout = bootTimeout;
    this.imageId = imageId;
  }

  /** The run's directory was created and its record written; teardown removes it. */
  void dirCreated() {
    dirCreated = true;
  }

  /** Creates the tap, the fence elements, the proxy and the VM, in that order. */
  void start(
      Path rootDisk,
      java.util.function.Function<java.util.Optional<String>, byte[]> initramfsFor,
      java.util.List<dev.agentsandbox.backend.RunCredential> proxyCredentials,
      Duration proxyReadyTimeout) {
    String step = "creating tap " + layout.placement().tap();
    try {
      HostCommands host = backend.host();
      tapCreated = true;
      for (List<String> command : layout.tapCommands()) {
        host.check(command, null);
      }
      step = "adding the run's elements to nftables table " + NftFence.TABLE;
      backend.ensureFence();
      elementsAdded = true;
      host.check(List.of("nft", "-f", "-"), NftFence.addElements(layout.fenceSlot()));

      step = "writing the proxy's policy " + layout.policyFile();
      GuestFiles.writePrivate(
          layout.policyFile(),
          layout.proxyPolicyJson().getBytes(StandardCharsets.UTF_8),
          Integer.parseInt(layout.placement().proxyUid()));
      if (!proxyCredentials.isEmpty()) {
        step = "writing the proxy's credentials into " + layout.proxyCredentialsDir();
        GuestFiles.writeProxyCredentials(
            layout.proxyCredentialsDir(),
            proxyCredentials,
            Integer.parseInt(layout.placement().proxyUid()));
      }
      step = "starting the proxy on " + layout.proxyUrl();
      proxy = ProxyProcess.start(layout.proxyCommandLine(), listener, runId);
      if (!proxy.awaitReady(proxyReadyTimeout.toMillis())) {
        throw new SandboxException(
            "no ready line within "
                + proxyReadyTimeout.toSeconds()
                + " s; its last output: "
                + proxy.lastErrors());
      }
      java.util.Optional<String> runCa = proxy.caCertificate();
      if (layout.inspects() && runCa.isEmpty()) {
        throw new SandboxException(
            "the proxy inspects hosts but announced no CA certificate before its ready line"
                + " (is its jar older than inspection?); its last output: "
                + proxy.lastErrors());
      }
      byte[] initramfs = initramfsFor.apply(runCa);

      step = "writing the run's initramfs " + layout.initramfs();
      int vmmUid = Integer.parseInt(layout.placement().vmmUid());
      // It holds the run's environment and credentials: readable by the run's VMM alone.
      GuestFiles.writePrivate(layout.initramfs(), initramfs, vmmUid);
      Files.createDirectory(layout.vmmDir());
      Files.setAttribute(layout.vmmDir(), "unix:uid", vmmUid);
      step = "creating the output disk " + layout.outputDisk();
      OutputDiskFile.create(layout.outputDisk(), layout.outputDiskBytes(), vmmUid);
      step = "opening the guest's channels in " + layout.dir();
      output =
          GuestChannel.listen(
              layout.outputSocket(), vmmUid, listener::onOutput, "asb-out-" + runId);
      statusChannel =
          GuestChannel.listen(layout.statusSocket(), vmmUid, status::accept, "asb-status-" + runId);
      control =
          GuestChannel.listen(
              layout.controlSocket(), vmmUid, port::received, port::ended, "asb-control-" + runId);
      List<String> command = backend.vmm().commandLine(layout.vmRequest(rootDisk));
      step = "starting the VM (" + runtime + ")";
      started = Instant.now();
      vm =
          HostChildren.start(
              new ProcessBuilder(command)
                  .redirectErrorStream(true)
                  .redirectOutput(layout.vmmDir().resolve("vmm.log").toFile()));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      teardownQuietly();
      throw new UnableToLaunchSandboxException(step + " for run " + runId + ": interrupted", e);
    } catch (IOException | RuntimeException e) {
      teardownQuietly();
      throw new UnableToLaunchSandboxException(
          step + " for run " + runId + ": " + e.getMessage(), e);
    }
  }

  @Override
  public String runId() {
    return runId;
  }

  @Override
  public String runtime() {
    return runtime;
  }

  /** The image id whose root disk the guest boots (the disk is cached by it). */
  @Override
  public Optional<String> imageId() {
    return Optional.of(imageId);
  }

  /** The VMM's process id (QEMU's, under setpriv and timeout), for measurements (RSS) and tests. */
  long vmmPid() {
    return HostChildren.leaf(vm).pid();
  }

  /** The tap's host address and the guest's address. */
  Placement placement() {
    return layout.placement();
  }

  /** When the guest's init reported that the command starts, if it has. */
  java.util.Optional<Instant> guestReadyAt() {
    return status.readyAt();
  }

  Instant startedAt() {
    return started;
  }

  @Override
  public Completion await(Instant deadline) throws InterruptedException {
    Instant until = deadline.isBefore(hardDeadline) ? deadline : hardDeadline;
    Instant bootBy = started.plus(bootTimeout);
    boolean bootTimedOut = false;
    boolean stopped = false;
    while (vm.isAlive()) {
      Instant now = Instant.now();
      if (!now.isBefore(until) || killed.get()) {
        stopped = true;
        break;
      }
      if (status.readyAt().isEmpty() && now.isAfter(bootBy)) {
        bootTimedOut = true;
        break;
      }
      long millis = Math.min(200, Duration.between(now, until).toMillis() + 1);
      vm.waitFor(millis, TimeUnit.MILLISECONDS);
    }
    if (stopped) {
      // A workload that ended just before the deadline is not stopped: its guest is writing the
      // outputs already and only gets the time to finish.
      boolean endedAlready = status.exitStatus().isPresent() && !killed.get();
      stopGuest(!endedAlready);
      stopped = !endedAlready;
    }
    if (vm.isAlive()) {
      HostChildren.kill(vm, Duration.ofSeconds(10));
    }
    output.awaitEnd(DRAIN_MILLIS);
    statusChannel.awaitEnd(DRAIN_MILLIS);
    if (proxy != null) {
      proxy.stop();
    }
    return new VmEnd(
            status.exitStatus(),
            Optional.ofNullable(failure),
            killed.get(),
            bootTimedOut,
            stopped,
            status.error(),
            status.outputsProblem())
        .completion(bootTimeout, until, vm::exitValue, layout.consoleLog());
  }

  /**
   * Asks the guest to stop its workload and write its outputs, and gives it {@link #STOP_GRACE} to
   * end; a guest that has not started its workload, or does not end in time, is killed outright.
   */
  private void stopGuest(boolean ask) throws InterruptedException {
    GuestChannel channel = control;
    boolean asked =
        status.readyAt().isPresent() && channel != null && (!ask || port.askToStop(channel));
    if (!asked || !vm.waitFor(STOP_GRACE.toMillis(), TimeUnit.MILLISECONDS)) {
      vm.destroyForcibly();
    }
  }

  /**
   * Stops the workload now: the guest kills everything the workload started at once, then writes
   * its outputs and ends ({@link #await} kills the VMM if it takes longer than {@link
   * #STOP_GRACE}). A guest that has not started the workload yet is killed outright.
   */
  @Override
  public void kill() {
    killed.set(true);
    Process process = vm;
    GuestChannel channel = control;
    boolean asked = status.readyAt().isPresent() && channel != null && port.askToStop(channel);
    if (process != null && !asked) {
      process.destroyForcibly();
    }
  }

  /**
   * Ends the sandbox as failed, now: the VMM is killed (no outputs are written) and {@link #await}
   * reports {@code detail}. For a guest that can no longer be trusted (its step runner broke the
   * protocol).
   */
  void failed(String detail) {
    failure = detail;
    Process process = vm;
    if (process != null) {
      process.destroyForcibly();
    }
  }

  /** Writes to the guest's control port; false when the VMM has not connected or it failed. */
  boolean sendControl(byte[] bytes) {
    GuestChannel channel = control;
    return channel != null && channel.send(bytes);
  }

  /**
   * The guest's {@code /workspace/out}, read off the output disk once the VM has stopped ({@link
   * OutputDiskFile#read}).
   */
  @Override
  public Optional<InputStream> outputs() {
    Process process = vm;
    if (process == null) {
      throw new SandboxException(
          "reading the outputs of run " + runId + ": its VM never started (nothing to read)");
    }
    if (process.isAlive()) {
      throw new SandboxException(
          "reading the outputs of run " + runId + ": its VM is still running (await it first)");
    }
    return Optional.of(OutputDiskFile.read(runId, layout.outputDisk(), layout.outputReadLimit()));
  }

  @Override
  public void teardown() {
    if (!tornDown.compareAndSet(false, true)) {
      return;
    }
    List<String> problems = new ArrayList<>();
    Process process = vm;
    if (process != null) {
      try {
        if (!HostChildren.kill(process, Duration.ofSeconds(10))) {
          problems.add("the VMM (pid " + process.pid() + ") did not exit");
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        problems.add("interrupted while waiting for the VMM to exit");
      }
    }
    if (proxy != null) {
      try {
        proxy.stop();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        problems.add("interrupted while stopping the proxy");
      }
    }
    for (GuestChannel channel : new GuestChannel[] {output, statusChannel, control}) {
      if (channel != null) {
        channel.close();
      }
    }
    if (elementsAdded) {
      problems.addAll(backend.removeElements(layout.fenceSlot()));
    }
    if (tapCreated) {
      problems.addAll(backend.removeTap(layout.placement().tap(), runId));
    }
    if (dirCreated) {
      try {
        GuestFiles.deleteTree(layout.dir());
      } catch (RuntimeException e) {
        problems.add("run directory " + layout.dir() + ": " + e.getMessage());
      }
    }
    UnableToTearDownSandboxException.throwIfAny("removing the microVM of run " + runId, problems);
  }

  private void teardownQuietly() {
    try {
      teardown();
    } catch (RuntimeException ignored) {
      // The launch error is the one to report; the reaper removes what is left.
    }
  }
}
