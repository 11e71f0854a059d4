package dev.agentsandbox.backend.microvm;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The reaper finds what a probe left: a probe directory whose control plane is gone (or that is
 * past the probe's hard limit) loses the processes naming it and then itself; a live control
 * plane's probe is left alone. The "VMM" here is a real process whose command line names the probe
 * directory, as QEMU's does.
 */
class ProbeReaperTest {
  @TempDir Path runDir;
  private Process stand;

  @AfterEach
  void stop() throws InterruptedException {
    if (stand != null) {
      stand.destroyForcibly();
      stand.waitFor(10, TimeUnit.SECONDS);
    }
  }

  private MicroVmReaper reaper() {
    return new MicroVmReaper(
        new MicroVmBackend(
            MicroVmConfig.defaults(List.of("agent-sandbox", "proxy")).toBuilder()
                .runDir(runDir)
                .subnetPool("10.213.0.0/24")
                .build()));
  }

  /** A process standing in for a probe's VMM: its command line names the probe directory. */
  private Process vmmNaming(Path dir) throws Exception {
    Path initrd = Files.writeString(dir.resolve("initramfs.cpio"), "x");
    return new ProcessBuilder("sh", "-c", "sleep 300", "qemu", "-initrd", initrd.toString())
        .start();
  }

  @Test
  void aProbeWhoseControlPlaneIsGoneIsRemovedWithItsVmm() throws Exception {
    // This JVM's pid with another start time: a control plane that died and whose pid came back.
    Path dir =
        Files.createDirectory(runDir.resolve("probe-" + ProcessHandle.current().pid() + "-1-x"));
    stand = vmmNaming(dir);
    assertThat(MicroVmReaper.probeIsOver(dir, Instant.now())).isTrue();
    assertThat(reaper().reapProbes(Instant.now())).isEmpty();
    assertThat(stand.waitFor(10, TimeUnit.SECONDS)).as("the leftover VMM was killed").isTrue();
    assertThat(dir).doesNotExist();
  }

  @Test
  void aLiveControlPlanesProbeIsLeftAlone() throws Exception {
    Path dir = Files.createTempDirectory(runDir, HostCheck.probePrefix());
    stand = vmmNaming(dir);
    assertThat(reaper().reapProbes(Instant.now())).isEmpty();
    assertThat(stand.isAlive()).isTrue();
    assertThat(dir).exists();
  }

  @Test
  void aLiveControlPlanesProbePastItsHardLimitIsRemoved() throws Exception {
    Path dir = Files.createTempDirectory(runDir, HostCheck.probePrefix());
    stand = vmmNaming(dir);
    Instant later = Instant.now().plus(HostCheck.PROBE_LIFETIME.multipliedBy(3));
    assertThat(reaper().reapProbes(later)).isEmpty();
    assertThat(stand.waitFor(10, TimeUnit.SECONDS)).isTrue();
    assertThat(dir).doesNotExist();
  }

  @Test
  void anOlderVersionsProbeDirectoryIsRemovedOncePastTheLimit() throws Exception {
    Path young = Files.createDirectory(runDir.resolve("probe-1234567890"));
    Path old = Files.createDirectory(runDir.resolve("probe-0987654321"));
    Files.setLastModifiedTime(old, FileTime.from(Instant.now().minus(Duration.ofMinutes(10))));
    assertThat(reaper().reapProbes(Instant.now())).isEmpty();
    assertThat(young).exists();
    assertThat(old).doesNotExist();
  }

  @Test
  void aRunDirectoryIsNeverTakenForAProbe() throws Exception {
    Path run = Files.createDirectory(runDir.resolve("abcdefghij0123456789"));
    Files.setLastModifiedTime(run, FileTime.from(Instant.now().minus(Duration.ofDays(1))));
    assertThat(reaper().reapProbes(Instant.now())).isEmpty();
    assertThat(run).exists();
  }
}
