package dev.agentsandbox.backend.microvm;

import dev.agentsandbox.backend.Isolation;
import dev.agentsandbox.backend.Probe;
import dev.agentsandbox.backend.ReapReport;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.backend.Sandbox;
import dev.agentsandbox.backend.SandboxBackend;
import dev.agentsandbox.backend.SandboxException;
import dev.agentsandbox.backend.SandboxListener;
import dev.agentsandbox.backend.SandboxPlan;
import dev.agentsandbox.backend.UnableToLaunchSandboxException;
import dev.agentsandbox.backend.session.SessionSandbox;
import dev.agentsandbox.backend.session.UnableToRunStepException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.Predicate;

/**
 * Sandboxes as microVMs on QEMU's {@code microvm} machine: per run, a read-only root disk made from
 * the agent's image, a tap with its own /30 from the pool, elements in the project's nftables table
 * that let the VM reach only its proxy's port, the proxy as a host process listening on the tap's
 * host address, and the VM itself. See docs/backends/microvm.md.
 */
public final class MicroVmBackend implements SandboxBackend {
  /** The backend's configured name. */
  public static final String NAME = "microvm";

  /** No run lives longer than this, whatever its ttl says. */
  public static final Duration MAX_TTL = Duration.ofHours(4);

  private final MicroVmConfig config;
  private final SubnetPool pool;
  private final HostCommands host;
  private final GuestFiles files;
  private final Vmm vmm;
  private final NftFence fence;
  private final MicroVmReaper reaper;
  private final Object slots = new Object();
  private final Object fenceLock = new Object();
  private volatile boolean fenceLoaded;
  private volatile Probe hardwareBoot;

  public MicroVmBackend(MicroVmConfig config) {
    this(config, new HostCommands());
  }

  MicroVmBackend(MicroVmConfig config, HostCommands host) {
    this.config = Objects.requireNonNull(config, "config");
    this.pool = SubnetPool.parse(config.subnetPool());
    this.host = host;
    this.files = new GuestFiles(config, host);
    this.vmm = new QemuMicroVm(config);
    this.fence = new NftFence(config.proxyUidBase(), config.proxyUidBase() + pool.slots() - 1);
    this.reaper = new MicroVmReaper(this);
  }

  @Override
  public String name() {
    return NAME;
  }

  MicroVmConfig config() {
    return config;
  }

  HostCommands host() {
    return host;
  }

  Vmm vmm() {
    return vmm;
  }

  SubnetPool pool() {
    return pool;
  }

  GuestFiles files() {
    return files;
  }

  /**
   * Yes: the run's credentials travel in its initramfs (readable by the slot's VMM uid alone) and
   * the guest's init puts them on a tmpfs as {@link dev.agentsandbox.backend.RunCredential} says.
   */
  @Override
  public boolean deliversCredentials() {
    return true;
  }

  @Override
  public Probe probe() {
    List<String> missing = HostCheck.missing(config, host);
    if (!missing.isEmpty()) {
      return Probe.unavailable(
          NAME,
          String.join("; ", missing) + " (scripts/install-host.sh installs and sets these up)");
    }
    if (config.emulated()) {
      return new Probe(
          NAME,
          true,
          Isolation.EMULATED,
          vmm.runtime(),
          "QEMU microvm under software emulation (tcg): slow, for hosts without usable KVM and"
              + " for tests");
    }
    Probe booted = hardwareBoot;
    if (booted == null) {
      synchronized (this) {
        if (hardwareBoot == null) {
          hardwareBoot = HostCheck.bootUnderKvm(this);
        }
        booted = hardwareBoot;
      }
    }
    return booted;
  }

  @Override
  public SandboxPlan plan(RunSpec spec) {
    Probe probe = probe();
    Isolation isolation =
        probe.available()
            ? probe.isolation()
            : config.emulated() ? Isolation.EMULATED : Isolation.MICROVM;
    Path rootDisk;
    try {
      rootDisk = files.rootDiskPath(files.imageId(spec.image()));
    } catch (SandboxException e) {
      rootDisk = config.cacheDir().resolve("rootfs-<image-id>.ext4");
    }
    return layout(spec, Placement.placeholder()).plan(isolation, fence, resolvers(), rootDisk);
  }

  private VmLayout layout(RunSpec spec, Placement placement) {
    return new VmLayout(spec, config, vmm, placement, tscKhz());
  }

  long tscKhz() {
    return config.tscKhz() > 0 ? config.tscKhz() : (config.emulated() ? HostCheck.tscKhz(host) : 0);
  }

  @Override
  public Sandbox launch(RunSpec spec, SandboxListener listener) {
    return start(spec, listener, null);
  }

  /** Yes: the guest's init runs the step runner on its control port (docs/step-runner.md). */
  @Override
  public boolean opensSessions() {
    return true;
  }

  /**
   * A run's VM, fence and proxy, with the step runner in the guest instead of the command; returns
   * once the runner has greeted the host, so the first step starts at once.
   */
  @Override
  public SessionSandbox openSession(RunSpec spec, SandboxListener listener) {
    MicroVmSession session = new MicroVmSession(spec.runId());
    start(spec, listener, session);
    try {
      session.runner().awaitReady(config.bootTimeout());
      return session;
    } catch (UnableToRunStepException e) {
      session.teardown();
      throw new UnableToLaunchSandboxException(
          "opening the session of run " + spec.runId() + " on microvm: " + e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      session.teardown();
      throw new UnableToLaunchSandboxException(
          "opening the session of run " + spec.runId() + ": interrupted", e);
    }
  }

  private MicroVmSandbox start(RunSpec spec, SandboxListener listener, MicroVmSession session) {
    Objects.requireNonNull(listener, "listener");
    Probe probe = probe();
    if (!probe.available()) {
      throw new UnableToLaunchSandboxException(
          "launching the sandbox of run " + spec.runId() + " on microvm: " + probe.detail());
    }
    String step = "looking up image " + spec.image();
    try {
      String imageId = files.imageId(spec.image());
      step = "making the root disk of image " + spec.image();
      Path rootDisk = files.rootDisk(spec.image());
      step = "building the guest's base initramfs";
      byte[] base = Files.readAllBytes(files.baseInitramfs());
      step = "taking a slot";
      return claimAndStart(spec, listener, rootDisk, base, imageId, session);
    } catch (UnableToLaunchSandboxException e) {
      throw e;
    } catch (IOException | RuntimeException e) {
      throw new UnableToLaunchSandboxException(
          step + " for run " + spec.runId() + ": " + e.getMessage(), e);
    }
  }

  private MicroVmSandbox claimAndStart(
      RunSpec spec,
      SandboxListener listener,
      Path rootDisk,
      byte[] baseInitramfs,
      String imageId,
      MicroVmSession session)
      throws IOException {
    Duration ttl = spec.ttl().compareTo(MAX_TTL) > 0 ? MAX_TTL : spec.ttl();
    Placement placement = claimSlot(spec);
    VmLayout layout = new VmLayout(spec, config, vmm, placement, tscKhz(), session != null);
    MicroVmSandbox sandbox =
        new MicroVmSandbox(
            this,
            layout,
            spec.runId(),
            vmm.runtime(),
            listener,
            Instant.now().plus(ttl),
            config.bootTimeout(),
            imageId,
            session == null ? GuestControlPort.ONE_SHOT : session);
    if (session != null) {
      session.attach(sandbox);
    }
    sandbox.dirCreated();
    // The initramfs is made once the proxy is ready: a run that inspects hosts carries its
    // proxy's CA certificate, which exists only from then on.
    java.util.function.Function<java.util.Optional<String>, byte[]> initramfs =
        runCa -> {
          byte[] runArchive =
              GuestFiles.runArchive(
                  layout.guestSettings(),
                  session == null ? spec.command() : List.of(),
                  layout.workloadEnv(),
                  spec.workloadCredentials(),
                  runCa);
          byte[] all = new byte[baseInitramfs.length + runArchive.length];
          System.arraycopy(baseInitramfs, 0, all, 0, baseInitramfs.length);
          System.arraycopy(runArchive, 0, all, baseInitramfs.length, runArchive.length);
          return all;
        };
    sandbox.start(rootDisk, initramfs, spec.proxyCredentials(), config.proxyReadyTimeout());
    return sandbox;
  }

  /**
   * Takes a free slot: the run's directory and record are written first (so a crash right after
   * leaves something the reaper can follow), the tap is created by the sandbox.
   */
  private Placement claimSlot(RunSpec spec) throws IOException {
    synchronized (slots) {
      Files.createDirectories(config.runDir());
      List<Integer> taken = new ArrayList<>();
      for (RunRecord record : reaper.records()) {
        taken.add(record.slot());
      }
      for (int slot = 0; slot < pool.slots(); slot++) {
        if (taken.contains(slot)
            || Files.exists(Path.of("/sys/class/net", SubnetPool.tapName(slot)))) {
          continue;
        }
        Placement placement = Placement.of(slot, pool, config);
        Path dir = config.runDir().resolve(spec.runId());
        // Others may pass through (the VMM and the proxy reach their files) but not list it.
        Files.createDirectory(
            dir,
            java.nio.file.attribute.PosixFilePermissions.asFileAttribute(
                java.nio.file.attribute.PosixFilePermissions.fromString("rwx--x--x")));
        new RunRecord(
                spec.runId(),
                spec.agent(),
                spec.expiresAt().getEpochSecond(),
                slot,
                placement.tap(),
                placement.hostAddress(),
                placement.guestAddress(),
                config.proxyPort(),
                Integer.parseInt(placement.proxyUid()),
                spec.egress().internalCidrs())
            .write(dir);
        return placement;
      }
    }
    throw new UnableToLaunchSandboxException(
        "taking a slot for run "
            + spec.runId()
            + ": all "
            + pool.slots()
            + " slots of "
            + config.subnetPool()
            + " are in use (widen the subnet pool)");
  }

  /** Loads the project's nftables table, once per process (loading is idempotent). */
  void ensureFence() {
    synchronized (fenceLock) {
      if (!fenceLoaded) {
        host.check(List.of("nft", "-f", "-"), fence.table(resolvers()));
        fenceLoaded = true;
      }
    }
  }

  NftFence fence() {
    return fence;
  }

  /** The host's IPv4 name servers, which the proxies may ask on port 53. */
  static List<String> resolvers() {
    try {
      return Files.readAllLines(Path.of("/etc/resolv.conf")).stream()
          .map(String::strip)
          .filter(l -> l.startsWith("nameserver "))
          .map(l -> l.substring("nameserver ".length()).strip())
          .filter(a -> a.matches("[0-9]{1,3}(\\.[0-9]{1,3}){3}"))
          .toList();
    } catch (IOException e) {
      return List.of();
    }
  }

  /** Removes one run's fence elements; returns what could not be removed. */
  List<String> removeElements(NftFence.Slot slot) {
    List<String> problems = new ArrayList<>();
    for (List<String> command : NftFence.deleteElements(slot)) {
      HostCommands.Result result = host.run(command, null);
      if (!result.ok() && !result.stderr().contains("No such file or directory")) {
        problems.add(
            "nftables element in "
                + command.get(5)
                + ": "
                + HostCommands.truncate(result.stderr().strip()));
      }
    }
    return problems;
  }

  /** Removes a tap if it is the run's (by its alias); returns what could not be removed. */
  List<String> removeTap(String tap, String runId) {
    Path alias = Path.of("/sys/class/net", tap, "ifalias");
    try {
      if (!Files.exists(alias)) {
        return List.of();
      }
      String owner = Files.readString(alias).strip();
      if (!owner.isEmpty() && !owner.equals(RunRecord.tapAlias(runId))) {
        return List.of();
      }
    } catch (IOException e) {
      return List.of("tap " + tap + ": " + e.getMessage());
    }
    HostCommands.Result result = host.run(List.of("ip", "link", "del", "dev", tap), null);
    if (!result.ok() && Files.exists(alias)) {
      return List.of("tap " + tap + ": " + HostCommands.truncate(result.stderr().strip()));
    }
    return List.of();
  }

  @Override
  public ReapReport reap(Instant now, Predicate<String> isLive) {
    return reaper.reap(now, isLive);
  }
}
