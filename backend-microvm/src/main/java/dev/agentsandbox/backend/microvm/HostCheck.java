package dev.agentsandbox.backend.microvm;

import dev.agentsandbox.backend.Isolation;
import dev.agentsandbox.backend.Probe;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** What the probe checks on the host, and the boot that proves hardware virtualization works. */
final class HostCheck {
  private static final Pattern TSC_MHZ =
      Pattern.compile(
          "tsc: (?:Refined TSC clocksource calibration|Detected): ([0-9]+)\\.([0-9]{3})");

  /**
   * How long the KVM boot may take: a guest that works boots under KVM in well under a second even
   * on a busy host, and serve's start waits for this probe.
   */
  static final long KVM_BOOT_SECONDS = 20;

  /**
   * The probe VMM's hard limit, kept by {@code timeout} whatever happens to this control plane: the
   * boot's wait, the wait for the report, and some slack.
   */
  static final java.time.Duration PROBE_LIFETIME =
      java.time.Duration.ofSeconds(KVM_BOOT_SECONDS + 10);

  /**
   * A probe's directory, named for the control plane that made it (its pid and start time), so that
   * the reaper tells a live probe from one whose control plane is gone.
   */
  static final Pattern PROBE_DIR = Pattern.compile("probe-([0-9]+)-([0-9]+)-.*");

  private HostCheck() {}

  /** Everything this host lacks for the backend, each with what was expected; empty when ready. */
  static List<String> missing(MicroVmConfig config, HostCommands host) {
    List<String> missing = new ArrayList<>();
    for (Path file : List.of(config.qemu(), config.kernel(), config.busybox())) {
      if (!Files.isReadable(file)) {
        missing.add(file + " is missing");
      }
    }
    for (String module : GuestFiles.MODULES) {
      if (!Files.isReadable(config.modules().resolve(module + ".ko"))) {
        missing.add(
            "guest kernel module " + config.modules().resolve(module + ".ko") + " is missing");
        break;
      }
    }
    for (List<String> tool :
        List.of(
            List.of("nft", "--version"),
            List.of("ip", "-V"),
            List.of("setpriv", "--version"),
            List.of("timeout", "--version"),
            List.of("mkfs.ext4", "-V"))) {
      try {
        if (!host.run(tool, null).ok()) {
          missing.add(tool.get(0) + " does not run");
        }
      } catch (RuntimeException e) {
        missing.add(tool.get(0) + " is not installed");
      }
    }
    Path tun = Path.of("/dev/net/tun");
    try {
      PosixFileAttributes attributes = Files.readAttributes(tun, PosixFileAttributes.class);
      boolean open =
          attributes.permissions().contains(PosixFilePermission.OTHERS_READ)
                  && attributes.permissions().contains(PosixFilePermission.OTHERS_WRITE)
              || attributes.permissions().contains(PosixFilePermission.GROUP_READ)
                  && attributes.permissions().contains(PosixFilePermission.GROUP_WRITE)
                  && Files.getAttribute(tun, "unix:gid").equals(config.vmmGid());
      if (!open) {
        missing.add(
            "/dev/net/tun is not open to the VMMs' group " + config.vmmGid() + " (mode and group)");
      }
    } catch (IOException e) {
      missing.add("/dev/net/tun is missing (no tun driver)");
    }
    if (!config.emulated()) {
      if (!Files.exists(Path.of("/dev/kvm"))) {
        missing.add(
            "/dev/kvm is missing (no hardware virtualization; serve --microvm-accel tcg"
                + " emulates the CPU in software instead)");
      } else if (QemuMicroVm.groups(config).equals("--clear-groups")) {
        missing.add(
            "/dev/kvm belongs to root's group, so no unprivileged VMM may open it"
                + " (scripts/install-host.sh gives it to the kvm group, mode 0660)");
      }
    }
    return missing;
  }

  /** The host's TSC rate in kHz, from the kernel log or else /proc/cpuinfo; 0 when unknown. */
  static long tscKhz(HostCommands host) {
    try {
      HostCommands.Result dmesg = host.run(List.of("dmesg"), null);
      Matcher m = TSC_MHZ.matcher(dmesg.stdout());
      long found = 0;
      while (m.find()) {
        found = Long.parseLong(m.group(1)) * 1000 + Long.parseLong(m.group(2));
      }
      if (found > 0) {
        return found;
      }
      for (String line : Files.readAllLines(Path.of("/proc/cpuinfo"))) {
        if (line.startsWith("cpu MHz")) {
          return Math.round(
              Double.parseDouble(line.substring(line.indexOf(':') + 1).strip()) * 1000);
        }
      }
    } catch (IOException | RuntimeException e) {
      return 0;
    }
    return 0;
  }

  /** {@code probe-<pid>-<start, epoch ms>-}: this control plane's name for a probe directory. */
  static String probePrefix() {
    ProcessHandle self = ProcessHandle.current();
    long started = self.info().startInstant().map(java.time.Instant::toEpochMilli).orElse(0L);
    return "probe-" + self.pid() + "-" + started + "-";
  }

  /**
   * Boots the guest kernel under KVM into a probe mode of the init, which only reports on its
   * status port. Hardware virtualization counts as working only if that report arrives: {@code
   * /dev/kvm} can exist and still fail every guest (a nested, paravirtual KVM).
   */
  static Probe bootUnderKvm(MicroVmBackend backend) {
    MicroVmConfig config = backend.config();
    Path dir = null;
    Process qemu = null;
    try {
      Files.createDirectories(config.runDir());
      dir = Files.createTempDirectory(config.runDir(), probePrefix());
      Files.setPosixFilePermissions(
          dir, java.nio.file.attribute.PosixFilePermissions.fromString("rwx--x--x"));
      Map<String, String> settings = new LinkedHashMap<>();
      settings.put("ASB_PROBE", "1");
      byte[] base = Files.readAllBytes(backend.files().baseInitramfs());
      byte[] run = GuestFiles.runArchive(settings, List.of("true"), Map.of());
      byte[] initramfs = new byte[base.length + run.length];
      System.arraycopy(base, 0, initramfs, 0, base.length);
      System.arraycopy(run, 0, initramfs, base.length, run.length);
      Path initrd = dir.resolve("initramfs.cpio");
      GuestFiles.writePrivate(initrd, initramfs, config.vmmUidBase());
      ByteArrayOutputStream received = new ByteArrayOutputStream();
      Path socket = dir.resolve("status.sock");
      try (GuestChannel status =
          GuestChannel.listen(
              socket,
              config.vmmUidBase(),
              chunk -> {
                synchronized (received) {
                  received.writeBytes(chunk);
                }
              },
              "asb-kvm-probe")) {
        List<String> command =
            List.of(
                "setpriv",
                "--reuid",
                Integer.toString(config.vmmUidBase()),
                "--regid",
                Integer.toString(config.vmmGid()),
                QemuMicroVm.groups(config),
                "--inh-caps=-all",
                "--bounding-set=-all",
                "--no-new-privs",
                HostChildren.DIE_WITH_PARENT.get(0),
                HostChildren.DIE_WITH_PARENT.get(1),
                "--",
                config.qemu().toString(),
                "-M",
                "microvm,x-option-roms=off,rtc=off",
                "-accel",
                "kvm",
                "-cpu",
                "host",
                "-m",
                "128M",
                "-nodefaults",
                "-no-user-config",
                "-nographic",
                "-no-reboot",
                "-sandbox",
                "on",
                "-kernel",
                config.kernel().toString(),
                "-initrd",
                initrd.toString(),
                "-append",
                "quiet loglevel=1 reboot=t panic=-1 rdinit=/init",
                "-device",
                "virtio-serial-device,max_ports=3",
                "-chardev",
                "socket,id=status,path=" + socket,
                "-device",
                "virtserialport,chardev=status,name=asb-status");
        Path log = dir.resolve("vmm.log");
        qemu =
            HostChildren.start(
                new ProcessBuilder(HostChildren.bounded(PROBE_LIFETIME, command))
                    .redirectErrorStream(true)
                    .redirectOutput(log.toFile()));
        // A KVM that cannot run the guest may leave QEMU paused rather than exiting: bounded wait.
        boolean exited = qemu.waitFor(KVM_BOOT_SECONDS, TimeUnit.SECONDS);
        status.awaitEnd(2_000);
        String reported;
        synchronized (received) {
          reported = received.toString(StandardCharsets.UTF_8);
        }
        byte[] vmmOutput = Files.readAllBytes(log);
        if (reported.contains("probe ok")) {
          return new Probe(
              MicroVmBackend.NAME,
              true,
              Isolation.MICROVM,
              backend.vmm().runtime(),
              "QEMU microvm: a guest booted under KVM");
        }
        String said = HostCommands.truncate(new String(vmmOutput, StandardCharsets.UTF_8).strip());
        String why =
            exited
                ? said
                : ("no report within " + KVM_BOOT_SECONDS + " s; QEMU said: " + said).strip();
        return Probe.unavailable(
            MicroVmBackend.NAME,
            "booting a guest under KVM: "
                + (why.isEmpty() ? "the guest stopped without reporting" : why)
                + " (this host's KVM cannot run the guest kernel; serve --microvm-accel tcg"
                + " emulates the CPU in software instead)");
      }
    } catch (IOException | RuntimeException e) {
      return Probe.unavailable(MicroVmBackend.NAME, "booting a guest under KVM: " + e.getMessage());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Probe.unavailable(MicroVmBackend.NAME, "booting a guest under KVM: interrupted");
    } finally {
      if (qemu != null) {
        try {
          HostChildren.kill(qemu, java.time.Duration.ofSeconds(10));
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      if (dir != null) {
        GuestFiles.deleteTree(dir);
      }
    }
  }
}
