package dev.agentsandbox.backend.microvm;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * How the microVM backend builds each run's VM, beyond what the run itself specifies.
 *
 * @param accel {@code kvm} (hardware virtualization) or {@code tcg} (software emulation, for hosts
 *     without usable KVM and for tests)
 * @param qemu the QEMU system emulator for x86-64
 * @param kernel the guest kernel image (scripts/install-host.sh unpacks Debian's cloud kernel)
 * @param modules the directory holding the guest kernel's virtio modules as {@code *.ko} files
 * @param busybox a statically linked busybox, the guest's init and tools
 * @param cacheDir where root disks (by image id) and the base initramfs are cached, shared
 * @param runDir where each run's directory (spec, sockets, per-run initramfs) lives
 * @param subnetPool the IPv4 range cut into one /30 per VM: the tap's host address and the guest's
 * @param proxyPort the port the run's proxy listens on, on the tap's host address only
 * @param proxyCommand how to start the proxy; {@code --policy FILE} is appended
 * @param vmmUidBase the VMM of the VM in slot {@code i} runs as uid {@code vmmUidBase + i}
 * @param vmmGid the group of every VMM, the one allowed to open {@code /dev/net/tun}
 * @param proxyUidBase the proxy of slot {@code i} runs as uid {@code proxyUidBase + i}, which the
 *     fence uses to keep the proxy itself away from the host's private addresses
 * @param proxyGid the group of every proxy
 * @param workloadUid the uid the command runs as inside the guest; never 0
 * @param tmpfsMb the size of the guest's writable {@code /tmp}, in MiB
 * @param workspaceMb the size of the guest's writable {@code /workspace}, in MiB
 * @param guestOverheadMb memory the guest kernel and init get on top of the workload's cap
 * @param tscKhz the host's TSC rate, handed to the guest under TCG; 0 reads it from the host
 * @param bootTimeout how long the guest may take to report that its command starts
 * @param proxyReadyTimeout how long the proxy may take to report that it listens
 */
public record MicroVmConfig(
    String accel,
    Path qemu,
    Path kernel,
    Path modules,
    Path busybox,
    Path cacheDir,
    Path runDir,
    String subnetPool,
    int proxyPort,
    List<String> proxyCommand,
    int vmmUidBase,
    int vmmGid,
    int proxyUidBase,
    int proxyGid,
    int workloadUid,
    int tmpfsMb,
    int workspaceMb,
    int guestOverheadMb,
    long tscKhz,
    Duration bootTimeout,
    Duration proxyReadyTimeout) {
  /** Where scripts/install-host.sh puts the guest kernel and its modules. */
  public static final Path DEFAULT_STATE_DIR = Path.of("/var/lib/agent-sandbox/microvm");

  public MicroVmConfig {
    if (!accel.equals("kvm") && !accel.equals("tcg")) {
      throw new IllegalArgumentException("accel must be kvm or tcg: " + accel);
    }
    Objects.requireNonNull(qemu, "qemu");
    Objects.requireNonNull(kernel, "kernel");
    Objects.requireNonNull(modules, "modules");
    Objects.requireNonNull(busybox, "busybox");
    Objects.requireNonNull(cacheDir, "cacheDir");
    Objects.requireNonNull(runDir, "runDir");
    SubnetPool.parse(subnetPool);
    if (proxyPort < 1 || proxyPort > 65535) {
      throw new IllegalArgumentException("proxyPort must be 1-65535: " + proxyPort);
    }
    proxyCommand = List.copyOf(proxyCommand);
    if (vmmUidBase <= 0 || proxyUidBase <= 0 || vmmGid <= 0 || proxyGid <= 0) {
      throw new IllegalArgumentException("the VMM's and the proxy's ids must not be root");
    }
    if (workloadUid <= 0) {
      throw new IllegalArgumentException("workloadUid must not be root: " + workloadUid);
    }
    if (tmpfsMb <= 0 || workspaceMb <= 0 || guestOverheadMb <= 0 || tscKhz < 0) {
      throw new IllegalArgumentException("sizes must be positive");
    }
    Objects.requireNonNull(bootTimeout, "bootTimeout");
    Objects.requireNonNull(proxyReadyTimeout, "proxyReadyTimeout");
  }

  /**
   * The defaults: hardware virtualization, the kernel scripts/install-host.sh unpacked, a /24 pool
   * (64 VMs) from 10.213.0.0, the proxy on port 3128, the command as nobody.
   */
  public static MicroVmConfig defaults(List<String> proxyCommand) {
    Path kernelDir = DEFAULT_STATE_DIR.resolve("kernel");
    return new MicroVmConfig(
        "kvm",
        Path.of("/usr/bin/qemu-system-x86_64"),
        kernelDir.resolve("vmlinuz"),
        kernelDir.resolve("modules"),
        Path.of("/bin/busybox"),
        DEFAULT_STATE_DIR.resolve("cache"),
        Path.of("/run/agent-sandbox/microvm"),
        "10.213.0.0/24",
        3128,
        proxyCommand,
        2_200_000,
        2_200_000,
        2_100_000,
        2_100_000,
        65534,
        64,
        256,
        96,
        0,
        Duration.ofMinutes(3),
        Duration.ofSeconds(60));
  }

  /** A builder holding this configuration's values, to change some of them. */
  public Builder toBuilder() {
    return new Builder(this);
  }

  /**
   * The values of one configuration, each settable; {@link #build()} validates them together in the
   * canonical constructor.
   */
  public static final class Builder {
    private String accel;
    private Path qemu;
    private Path kernel;
    private Path modules;
    private Path busybox;
    private Path cacheDir;
    private Path runDir;
    private String subnetPool;
    private int proxyPort;
    private List<String> proxyCommand;
    private int vmmUidBase;
    private int vmmGid;
    private int proxyUidBase;
    private int proxyGid;
    private int workloadUid;
    private int tmpfsMb;
    private int workspaceMb;
    private int guestOverheadMb;
    private long tscKhz;
    private Duration bootTimeout;
    private Duration proxyReadyTimeout;

    private Builder(MicroVmConfig c) {
      accel = c.accel;
      qemu = c.qemu;
      kernel = c.kernel;
      modules = c.modules;
      busybox = c.busybox;
      cacheDir = c.cacheDir;
      runDir = c.runDir;
      subnetPool = c.subnetPool;
      proxyPort = c.proxyPort;
      proxyCommand = c.proxyCommand;
      vmmUidBase = c.vmmUidBase;
      vmmGid = c.vmmGid;
      proxyUidBase = c.proxyUidBase;
      proxyGid = c.proxyGid;
      workloadUid = c.workloadUid;
      tmpfsMb = c.tmpfsMb;
      workspaceMb = c.workspaceMb;
      guestOverheadMb = c.guestOverheadMb;
      tscKhz = c.tscKhz;
      bootTimeout = c.bootTimeout;
      proxyReadyTimeout = c.proxyReadyTimeout;
    }

    public Builder accel(String value) {
      accel = value;
      return this;
    }

    public Builder qemu(Path value) {
      qemu = value;
      return this;
    }

    public Builder kernel(Path value) {
      kernel = value;
      return this;
    }

    public Builder modules(Path value) {
      modules = value;
      return this;
    }

    public Builder busybox(Path value) {
      busybox = value;
      return this;
    }

    public Builder cacheDir(Path value) {
      cacheDir = value;
      return this;
    }

    public Builder runDir(Path value) {
      runDir = value;
      return this;
    }

    public Builder subnetPool(String value) {
      subnetPool = value;
      return this;
    }

    public Builder proxyPort(int value) {
      proxyPort = value;
      return this;
    }

    public Builder proxyCommand(List<String> value) {
      proxyCommand = value;
      return this;
    }

    public Builder vmmUidBase(int value) {
      vmmUidBase = value;
      return this;
    }

    public Builder vmmGid(int value) {
      vmmGid = value;
      return this;
    }

    public Builder proxyUidBase(int value) {
      proxyUidBase = value;
      return this;
    }

    public Builder proxyGid(int value) {
      proxyGid = value;
      return this;
    }

    public Builder workloadUid(int value) {
      workloadUid = value;
      return this;
    }

    public Builder tmpfsMb(int value) {
      tmpfsMb = value;
      return this;
    }

    public Builder workspaceMb(int value) {
      workspaceMb = value;
      return this;
    }

    public Builder guestOverheadMb(int value) {
      guestOverheadMb = value;
      return this;
    }

    public Builder tscKhz(long value) {
      tscKhz = value;
      return this;
    }

    public Builder bootTimeout(Duration value) {
      bootTimeout = value;
      return this;
    }

    public Builder proxyReadyTimeout(Duration value) {
      proxyReadyTimeout = value;
      return this;
    }

    /**
     * The configuration.
     *
     * @throws IllegalArgumentException naming the value that is wrong
     */
    public MicroVmConfig build() {
      return new MicroVmConfig(
          accel,
          qemu,
          kernel,
          modules,
          busybox,
          cacheDir,
          runDir,
          subnetPool,
          proxyPort,
          proxyCommand,
          vmmUidBase,
          vmmGid,
          proxyUidBase,
          proxyGid,
          workloadUid,
          tmpfsMb,
          workspaceMb,
          guestOverheadMb,
          tscKhz,
          bootTimeout,
          proxyReadyTimeout);
    }
  }

  /** Whether the guest's CPU is emulated in software. */
  public boolean emulated() {
    return accel.equals("tcg");
  }
}
