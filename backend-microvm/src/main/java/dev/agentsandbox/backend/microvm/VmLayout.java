package dev.agentsandbox.backend.microvm;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.agentsandbox.backend.Isolation;
import dev.agentsandbox.backend.RunContract;
import dev.agentsandbox.backend.RunCredential;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.backend.SandboxPlan;
import dev.agentsandbox.policy.config.ProxyPolicy;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Everything one run's VM consists of, derived from its spec, the backend's configuration and the
 * run's placement alone. The plan and the launch both read it from here, so what a plan shows is
 * what a launch creates.
 */
final class VmLayout {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** The output disk's room beyond the workspace's size, for tar headers and padding. */
  static final int OUTPUT_HEADROOM_MB = 32;

  private final RunSpec spec;
  private final MicroVmConfig config;
  private final Vmm vmm;
  private final Placement placement;
  private final long tscKhz;
  private final boolean session;

  VmLayout(RunSpec spec, MicroVmConfig config, Vmm vmm, Placement placement, long tscKhz) {
    this(spec, config, vmm, placement, tscKhz, false);
  }

  /**
   * @param session whether the guest runs the step runner on its control port instead of the spec's
   *     command (a session's VM)
   */
  VmLayout(
      RunSpec spec,
      MicroVmConfig config,
      Vmm vmm,
      Placement placement,
      long tscKhz,
      boolean session) {
    this.spec = spec;
    this.config = config;
    this.vmm = vmm;
    this.placement = placement;
    this.tscKhz = tscKhz;
    this.session = session;
  }

  boolean session() {
    return session;
  }

  /** The run's spec: what the plan names (its image, command, labels and credentials). */
  RunSpec spec() {
    return spec;
  }

  /** The VMM the run's VM runs under. */
  Vmm vmm() {
    return vmm;
  }

  Placement placement() {
    return placement;
  }

  /** The run's directory: its record, the proxy's policy, the initramfs, the channels. */
  Path dir() {
    return config.runDir().resolve(spec.runId());
  }

  Path vmmDir() {
    return dir().resolve("vmm");
  }

  Path policyFile() {
    return dir().resolve("proxy-policy.json");
  }

  /**
   * The folder the proxy reads the credentials it injects from (the policy's {@code
   * credentials_dir}): the proxy uid's alone, in the run's directory, gone with it. The guest never
   * sees it.
   */
  Path proxyCredentialsDir() {
    return dir().resolve("proxy-credentials");
  }

  /** Whether the run's proxy terminates TLS for some host, so the guest must trust its CA. */
  boolean inspects() {
    return !spec.egress().inspect().isEmpty();
  }

  Path initramfs() {
    return dir().resolve("initramfs.cpio");
  }

  Path outputSocket() {
    return dir().resolve("output.sock");
  }

  Path statusSocket() {
    return dir().resolve("status.sock");
  }

  Path controlSocket() {
    return dir().resolve("control.sock");
  }

  /**
   * The output disk, in the run's directory (which the VMM's uid cannot write) rather than in the
   * VMM's own folder: so the VMM cannot swap it for a link to a host file the backend would read.
   */
  Path outputDisk() {
    return dir().resolve("out.img");
  }

  /**
   * The output disk's size: the workspace's plus room for the tar headers of many small files. An
   * archive larger than this is cut short in the guest; the entries before the cut are kept.
   */
  long outputDiskBytes() {
    return (config.workspaceMb() + OUTPUT_HEADROOM_MB) * 1024L * 1024L;
  }

  /**
   * How much of the output disk is read: its size, and no more than what the run's caps can keep
   * plus room for headers ({@link dev.agentsandbox.backend.RunContract#outArchiveLimit}).
   */
  long outputReadLimit() {
    return Math.min(
        outputDiskBytes(), dev.agentsandbox.backend.RunContract.outArchiveLimit(spec.outputs()));
  }

  Path consoleLog() {
    return vmmDir().resolve("console.log");
  }

  String proxyUrl() {
    return "http://" + placement.hostAddress() + ":" + config.proxyPort();
  }

  int vcpus() {
    return (int) Math.max(1, Math.ceil(spec.resources().cpus()));
  }

  int guestMemoryMb() {
    return spec.resources().memoryMb() + config.guestOverheadMb();
  }

  /**
   * The proxy's policy document ({@code --policy FILE}, see docs/proxy.md): the run's, listening
   * only on the tap's host address.
   */
  String proxyPolicyJson() {
    ProxyPolicy forRun =
        ProxyPolicy.forRun(
            spec.egress(),
            spec.runId(),
            config.proxyPort(),
            spec.expiresAt(),
            proxyCredentialsDir().toString());
    ProxyPolicy policy =
        new ProxyPolicy(
            placement.hostAddress() + ":" + config.proxyPort(),
            forRun.allow(),
            forRun.instanceAllow(),
            forRun.internal(),
            forRun.hosts(),
            forRun.dnsServer(),
            forRun.runId(),
            forRun.decisions(),
            forRun.metrics(),
            forRun.limits(),
            forRun.inspect());
    try {
      return JSON.writeValueAsString(policy.toTree());
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("serializing the proxy policy cannot fail for plain maps", e);
    }
  }

  /**
   * The proxy's command line, as the slot's proxy uid, bounded like the VMM to its control plane's
   * life and to a little more than the VMM's lifetime (it stops after the VM).
   */
  List<String> proxyCommandLine() {
    List<String> command = new ArrayList<>();
    command.addAll(
        List.of(
            "setpriv",
            "--reuid",
            placement.proxyUid(),
            "--regid",
            Integer.toString(config.proxyGid()),
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
            "--no-new-privs"));
    command.addAll(HostChildren.DIE_WITH_PARENT);
    command.add("--");
    command.addAll(config.proxyCommand());
    command.add("--policy");
    command.add(policyFile().toString());
    return HostChildren.bounded(vmLifetime().plusSeconds(30), command);
  }

  /**
   * The longest the run's VMM may live whatever happens to its control plane: the run's ttl (at
   * most {@link MicroVmBackend#MAX_TTL}), the grace a stopping guest gets, and a minute more.
   */
  java.time.Duration vmLifetime() {
    java.time.Duration ttl =
        spec.ttl().compareTo(MicroVmBackend.MAX_TTL) > 0 ? MicroVmBackend.MAX_TTL : spec.ttl();
    return ttl.plus(MicroVmSandbox.STOP_GRACE).plusMinutes(1);
  }

  /** The guest kernel's command line. */
  String kernelCommandLine() {
    List<String> args = new ArrayList<>();
    args.addAll(
        List.of(
            "console=ttyS0",
            "quiet",
            "loglevel=1",
            "reboot=t",
            "panic=-1",
            "ipv6.disable=1",
            "rdinit=/init"));
    if (tscKhz > 0) {
      // Under TCG the kernel otherwise calibrates against the emulated PIT, which hangs about one
      // boot in eight on a busy host.
      args.add("tsc_early_khz=" + tscKhz);
    }
    return String.join(" ", args);
  }

  /** The settings the guest init reads from {@code /asb/run.env}. */
  Map<String, String> guestSettings() {
    Map<String, String> settings = new LinkedHashMap<>();
    settings.put("ASB_ADDRESS", placement.guestAddress());
    settings.put("ASB_PREFIX", "30");
    settings.put("ASB_GATEWAY", placement.hostAddress());
    settings.put("ASB_TMPFS_MB", Integer.toString(config.tmpfsMb()));
    settings.put("ASB_WORKSPACE_MB", Integer.toString(config.workspaceMb()));
    settings.put("ASB_UID", Integer.toString(config.workloadUid()));
    settings.put("ASB_GID", Integer.toString(config.workloadUid()));
    settings.put("ASB_PIDS", Integer.toString(spec.resources().pids()));
    settings.put("ASB_MEMORY_MB", Integer.toString(spec.resources().memoryMb()));
    // The guest has no clock of its own (the machine runs with rtc=off and no kvmclock under TCG):
    // without this it starts at 1970, and every certificate is "not yet valid" to its clients.
    settings.put("ASB_CLOCK", Long.toString(java.time.Instant.now().getEpochSecond()));
    if (session) {
      settings.put("ASB_SESSION", "1");
    }
    return settings;
  }

  /**
   * The workload's environment: the run's, the credentials that ask for a variable, then the proxy
   * variables in both spellings, the run contract's two folders and the run's id.
   */
  Map<String, String> workloadEnv() {
    Map<String, String> env = new LinkedHashMap<>();
    env.put("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
    env.put("HOME", "/workspace");
    env.putAll(new TreeMap<>(spec.env()));
    // A credential the proxy injects is a placeholder here: its value never enters the guest.
    for (RunCredential credential : spec.workloadCredentials()) {
      credential.env().ifPresent(key -> env.put(key, credential.value()));
    }
    if (inspects()) {
      env.putAll(dev.agentsandbox.backend.RunTrust.environment());
    }
    // Both spellings: curl reads only the lower-case http_proxy, most other tools either.
    for (String key : List.of("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")) {
      env.put(key, proxyUrl());
    }
    env.put("NO_PROXY", "");
    env.put("no_proxy", "");
    env.put(RunContract.OUT_ENV, RunContract.OUT_DIR);
    env.put(RunContract.CREDENTIALS_ENV, RunContract.CREDENTIALS_DIR);
    env.put(RunContract.RUN_ID_ENV, spec.runId());
    return env;
  }

  /** A locally administered MAC derived from the slot. */
  String mac() {
    String slot = placement.slot();
    if (!slot.matches("[0-9]+")) {
      return "02:00:00:00:<slot>";
    }
    int n = Integer.parseInt(slot);
    return String.format("02:a5:b0:00:%02x:%02x", (n >> 8) & 0xff, n & 0xff);
  }

  Vmm.VmRequest vmRequest(Path rootDisk) {
    return new Vmm.VmRequest(
        "asb-" + spec.runId(),
        vcpus(),
        guestMemoryMb(),
        kernelCommandLine(),
        initramfs().toString(),
        rootDisk.toString(),
        outputDisk().toString(),
        placement.tap(),
        mac(),
        outputSocket().toString(),
        statusSocket().toString(),
        controlSocket().toString(),
        consoleLog().toString(),
        placement.vmmUid(),
        Integer.toString(config.vmmGid()),
        vmLifetime());
  }

  NftFence.Slot fenceSlot() {
    return new NftFence.Slot(
        spec.runId(),
        placement.tap(),
        placement.guestAddress(),
        placement.hostAddress(),
        config.proxyPort(),
        parseOr(placement.proxyUid()),
        spec.egress().internalCidrs());
  }

  private static int parseOr(String uid) {
    return uid.matches("[0-9]+") ? Integer.parseInt(uid) : 0;
  }

  /** The commands that create the run's tap, in order. */
  List<List<String>> tapCommands() {
    String tap = placement.tap();
    return List.of(
        List.of(
            "ip",
            "tuntap",
            "add",
            "dev",
            tap,
            "mode",
            "tap",
            "user",
            placement.vmmUid(),
            "group",
            Integer.toString(config.vmmGid())),
        List.of("ip", "link", "set", "dev", tap, "alias", RunRecord.tapAlias(spec.runId())),
        List.of("sysctl", "-q", "-w", "net.ipv6.conf." + tap + ".disable_ipv6=1"),
        List.of("ip", "addr", "add", placement.hostAddress() + "/30", "dev", tap),
        List.of("ip", "link", "set", "dev", tap, "up"));
  }

  /** Everything in creation order, as {@link MicroVmBackend#launch} creates it ({@link VmPlan}). */
  SandboxPlan plan(Isolation isolation, NftFence fence, List<String> resolvers, Path rootDisk) {
    return VmPlan.of(this, isolation, fence, resolvers, rootDisk);
  }
}
