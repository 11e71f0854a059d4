package dev.agentsandbox.backend.microvm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Issue 26: a control plane that ended while its KVM probe waited on a QEMU that never reports
 * (this host's nested KVM cannot run the guest) left that QEMU spinning for ever. Here a real JVM
 * probes with the real QEMU, started paused ({@code -S}: it never reports, as this host's KVM
 * sometimes leaves it; under TCG, since this host's KVM at other times fails at once), and is
 * killed with SIGKILL, or stopped with SIGTERM as a short-lived serve is, once the probe's QEMU
 * runs: no process of the probe may survive it, and the reaper then removes its directory. A
 * control plane that hangs instead (SIGSTOP) keeps its QEMU no longer than the probe's hard limit.
 */
class MicroVmProbeLeakIT {
  private Path runDir;
  private Path pausedQemu;

  @BeforeEach
  void runDirectory() throws Exception {
    // Under /run, traversable by the VMM's uid as the real run directory is (a JUnit temp
    // directory is 0700 root's, and QEMU would fail at once rather than hang).
    runDir = Path.of("/run/agent-sandbox/probe-it-" + ProcessHandle.current().pid());
    Files.createDirectories(runDir);
    Files.setPosixFilePermissions(runDir.getParent(), PosixFilePermissions.fromString("rwx--x--x"));
    Files.setPosixFilePermissions(runDir, PosixFilePermissions.fromString("rwx--x--x"));
    pausedQemu = runDir.resolve("qemu-paused");
    // The real QEMU, paused from its start, under TCG: this host's KVM either fails at once (then
    // there is nothing to leak) or hangs; a paused TCG guest hangs every time, and never reports.
    Files.writeString(
        pausedQemu,
        String.join(
            "\n",
            "#!/bin/sh",
            "for a in \"$@\"; do",
            "  case \"$a\" in kvm) a=tcg ;; host) a=qemu64 ;; esac",
            "  set -- \"$@\" \"$a\"; shift",
            "done",
            "exec /usr/bin/qemu-system-x86_64 \"$@\" -S",
            ""));
    Files.setPosixFilePermissions(pausedQemu, PosixFilePermissions.fromString("rwxr-xr-x"));
  }

  @AfterEach
  void removeRunDirectory() {
    MicroVmReaper.killProcessesNaming(runDir);
    GuestFiles.deleteTree(runDir);
  }

  @ParameterizedTest(name = "the control plane ends by {0}")
  @ValueSource(strings = {"SIGKILL", "SIGTERM", "SIGSTOP"})
  void noProbeVmmOutlivesItsControlPlane(String signal) throws Exception {
    String java = ProcessHandle.current().info().command().orElse("java");
    Process controlPlane =
        new ProcessBuilder(
                java,
                "-cp",
                System.getProperty("java.class.path"),
                ProbeAndHang.class.getName(),
                runDir.toString(),
                pausedQemu.toString())
            .redirectErrorStream(true)
            .start();
    long vmm = -1;
    StringBuilder seen = new StringBuilder();
    try (BufferedReader lines =
        new BufferedReader(
            new InputStreamReader(controlPlane.getInputStream(), StandardCharsets.UTF_8))) {
      String line;
      while (vmm < 0 && (line = lines.readLine()) != null) {
        seen.append(line).append('\n');
        if (line.startsWith(ProbeAndHang.VMM)) {
          vmm = Long.parseLong(line.substring(ProbeAndHang.VMM.length()).strip());
        }
        if (line.startsWith(ProbeAndHang.ENDED)) {
          controlPlane.waitFor(30, TimeUnit.SECONDS);
          Assumptions.abort(
              "this host's KVM probe ended before the control plane could be ended mid-way: "
                  + line);
        }
      }
      assertThat(vmm).as("the probe started QEMU: " + seen).isPositive();
      assertThat(ProcessHandle.of(vmm)).as("QEMU runs before the control plane ends").isPresent();
      List<Long> probe = processesNaming(runDir);
      assertThat(probe).as("the probe's processes").contains(vmm);

      if (signal.equals("SIGSTOP")) {
        signal(controlPlane, "-STOP");
        try {
          await("the probe's QEMU to end at its hard limit while its control plane hangs")
              .atMost(HostCheck.PROBE_LIFETIME.plusSeconds(15))
              .pollInterval(Duration.ofMillis(250))
              .untilAsserted(() -> assertThat(processesNaming(runDir)).isEmpty());
          assertThat(controlPlane.isAlive()).as("the control plane still lives, stopped").isTrue();
        } finally {
          signal(controlPlane, "-CONT");
          controlPlane.destroyForcibly();
        }
      } else if (signal.equals("SIGKILL")) {
        controlPlane.destroyForcibly();
      } else {
        controlPlane.destroy();
      }
      assertThat(controlPlane.waitFor(60, TimeUnit.SECONDS)).isTrue();
    }
    await("every process of the probe to end with its control plane")
        .atMost(Duration.ofSeconds(10))
        .pollInterval(Duration.ofMillis(100))
        .untilAsserted(() -> assertThat(processesNaming(runDir)).isEmpty());

    MicroVmBackend backend =
        new MicroVmBackend(
            MicroVmItSupport.config().toBuilder()
                .runDir(runDir)
                .subnetPool("10.213.0.0/24")
                .build());
    assertThat(backend.reap(Instant.now(), id -> false).problems()).isEmpty();
    try (var left = Files.list(runDir)) {
      assertThat(left.filter(p -> p.getFileName().toString().startsWith("probe-")).toList())
          .as("what the probe left, once reaped")
          .isEmpty();
    }
  }

  private static void signal(Process process, String signal) throws Exception {
    Process kill = new ProcessBuilder("kill", signal, Long.toString(process.pid())).start();
    assertThat(kill.waitFor(10, TimeUnit.SECONDS) && kill.exitValue() == 0).isTrue();
  }

  /** The processes whose command line names a probe directory in the run directory. */
  private static List<Long> processesNaming(Path dir) {
    return ProcessHandle.allProcesses()
        .filter(p -> ProbeAndHang.commandLine(p).contains(dir + "/probe-"))
        .map(ProcessHandle::pid)
        .toList();
  }
}
