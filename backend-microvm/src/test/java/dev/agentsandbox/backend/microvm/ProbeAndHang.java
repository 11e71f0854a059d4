package dev.agentsandbox.backend.microvm;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

/**
 * A stand-in control plane for {@link MicroVmProbeLeakIT}: probes the backend under KVM on a thread
 * of its own (as serve does), says which VMM the probe started once it runs, and waits to be ended,
 * so that the probe's {@code finally} never runs.
 *
 * <p>Arguments: the run directory, and the QEMU to probe with: the test's wrapper, which runs the
 * real QEMU with {@code -S} so that the guest never starts and never reports, as this host's KVM
 * sometimes leaves it (at other times QEMU fails at once, and there is nothing to leak).
 */
public final class ProbeAndHang {
  static final String VMM = "vmm ";
  static final String ENDED = "probe ended first: ";

  private ProbeAndHang() {}

  public static void main(String[] args) throws Exception {
    Path runDir = Path.of(args[0]);
    MicroVmBackend backend =
        new MicroVmBackend(
            MicroVmItSupport.config().toBuilder()
                .accel("kvm")
                .qemu(Path.of(args[1]))
                .runDir(runDir)
                .subnetPool("10.213.0.0/24")
                .build());
    Thread probe =
        Thread.ofPlatform().start(() -> System.out.println(ENDED + backend.probe().detail()));
    Instant giveUp = Instant.now().plus(Duration.ofMinutes(2));
    while (probe.isAlive() && Instant.now().isBefore(giveUp)) {
      Optional<ProcessHandle> qemu =
          ProcessHandle.allProcesses()
              .filter(p -> commandLine(p).contains(runDir + "/probe-"))
              .filter(p -> commandLine(p).startsWith("/usr/bin/qemu-system-x86_64 "))
              .findFirst();
      if (qemu.isPresent()) {
        System.out.println(VMM + qemu.get().pid());
        System.out.flush();
        Thread.sleep(Duration.ofMinutes(5));
      }
      Thread.sleep(20);
    }
    probe.join();
  }

  static String commandLine(ProcessHandle process) {
    try {
      byte[] raw = Files.readAllBytes(Path.of("/proc", Long.toString(process.pid()), "cmdline"));
      return new String(raw, StandardCharsets.UTF_8).replace('\0', ' ');
    } catch (java.io.IOException e) {
      return "";
    }
  }
}
