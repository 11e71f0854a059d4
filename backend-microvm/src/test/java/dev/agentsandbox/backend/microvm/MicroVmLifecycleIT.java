package dev.agentsandbox.backend.microvm;

import static dev.agentsandbox.backend.microvm.MicroVmItSupport.SUITE;
import static dev.agentsandbox.backend.microvm.MicroVmItSupport.cleanUpAndAssertNothingLeft;
import static dev.agentsandbox.testing.ItRuns.noEgress;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.agentsandbox.backend.Completion;
import dev.agentsandbox.backend.Manifest;
import dev.agentsandbox.backend.ReapReport;
import dev.agentsandbox.backend.SandboxPlan;
import dev.agentsandbox.policy.config.Resources;
import dev.agentsandbox.testing.RecordingListener;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A run's life in a VM, end to end: the deadline, a kill, a memory hog, a fork bomb, a control
 * plane killed with SIGKILL mid-run, and a plan that names every object. The first four VMs boot
 * together, sharing the cached root disk and base initramfs, to keep the suite's time bounded.
 */
class MicroVmLifecycleIT {
  private static MicroVmBackend backend;
  private static MicroVmSandbox deadline;
  private static MicroVmSandbox killed;
  private static MicroVmSandbox hog;
  private static MicroVmSandbox bomb;
  private static final RecordingListener DEADLINE_OUT = new RecordingListener();
  private static final RecordingListener KILLED_OUT = new RecordingListener();
  private static final RecordingListener HOG_OUT = new RecordingListener();
  private static final RecordingListener BOMB_OUT = new RecordingListener();

  @BeforeAll
  static void launchAll() {
    backend = MicroVmItSupport.requireBackend();
    Duration ttl = Duration.ofMinutes(10);
    // Both leave a file in out/ first: outputs are read off the disk however the run ends.
    deadline =
        (MicroVmSandbox)
            backend.launch(
                SUITE.spec(
                    SUITE.newRunId(),
                    writeThenSleep("deadline"),
                    noEgress(),
                    SUITE.smallCaps(),
                    ttl),
                DEADLINE_OUT);
    killed =
        (MicroVmSandbox)
            backend.launch(
                SUITE.spec(
                    SUITE.newRunId(), writeThenSleep("killed"), noEgress(), SUITE.smallCaps(), ttl),
                KILLED_OUT);
    // Doubles a shell string until the guest's cgroup memory cap stops it.
    hog =
        (MicroVmSandbox)
            backend.launch(
                SUITE.spec(
                    SUITE.newRunId(),
                    List.of("sh", "-c", "x=0123456789abcdef; while true; do x=$x$x; done"),
                    noEgress(),
                    new Resources(1, 96, 128),
                    ttl),
                HOG_OUT);
    // Starts up to 400 processes against a cap of 64, in a subshell that dies at the first fork
    // the cap refuses; the count is read back with shell builtins only, since once the cap is
    // reached nothing else can be started.
    bomb =
        (MicroVmSandbox)
            backend.launch(
                SUITE.spec(
                    SUITE.newRunId(),
                    List.of(
                        "sh",
                        "-c",
                        "( n=0; while [ $n -lt 400 ]; do sleep 120 & n=$((n+1)); echo $n >/tmp/n;"
                            + " done ) 2>/dev/null; read -r n </tmp/n; echo started=$n; exit 0"),
                    noEgress(),
                    new Resources(1, 160, 64),
                    ttl),
                BOMB_OUT);
  }

  @AfterAll
  static void tearDown() throws Exception {
    for (MicroVmSandbox sandbox : new MicroVmSandbox[] {deadline, killed, hog, bomb}) {
      if (sandbox != null) {
        sandbox.teardown();
      }
    }
    if (backend != null) {
      cleanUpAndAssertNothingLeft(backend);
    }
  }

  private static List<String> writeThenSleep(String word) {
    return List.of(
        "sh", "-c", "echo " + word + " >\"$AGENT_SANDBOX_OUT/left.txt\"; echo written; sleep 600");
  }

  /** Waits (bounded) until the workload has written its file. */
  private static void awaitWritten(RecordingListener listener) {
    Awaitility.await("the workload wrote its file")
        .atMost(backend.config().bootTimeout())
        .pollInterval(Duration.ofMillis(200))
        .untilAsserted(() -> assertThat(listener.output()).contains("written"));
  }

  /** The files in a sandbox's outputs, by name, with their content. */
  private static Map<String, String> outputFiles(MicroVmSandbox sandbox) throws Exception {
    Map<String, String> files = new TreeMap<>();
    try (InputStream outputs = sandbox.outputs().orElseThrow();
        TarArchiveInputStream tar = new TarArchiveInputStream(outputs)) {
      for (TarArchiveEntry e = tar.getNextEntry(); e != null; e = tar.getNextEntry()) {
        if (e.isFile()) {
          files.put(e.getName(), new String(tar.readAllBytes(), StandardCharsets.UTF_8));
        }
      }
    }
    return files;
  }

  /** Waits (bounded) until the guest reports that its command starts. */
  private static void awaitGuestReady(MicroVmSandbox sandbox) {
    Awaitility.await("the guest of " + sandbox.runId() + " booted")
        .atMost(backend.config().bootTimeout())
        .pollInterval(Duration.ofMillis(200))
        .until(() -> sandbox.guestReadyAt().isPresent());
  }

  @Test
  void theDeadlineStopsTheVm() throws Exception {
    awaitGuestReady(deadline);
    awaitWritten(DEADLINE_OUT);
    Completion end = deadline.await(Instant.now().plusSeconds(3));
    assertThat(end.end()).as(end.toString()).isEqualTo(Completion.End.DEADLINE);
    assertThat(ProcessHandle.of(deadline.vmmPid())).as("the VMM is gone").isEmpty();
    assertThat(outputFiles(deadline)).containsExactly(Map.entry("out/left.txt", "deadline\n"));
  }

  @Test
  void aKillStopsTheVm() throws Exception {
    awaitGuestReady(killed);
    awaitWritten(KILLED_OUT);
    Thread killer =
        Thread.ofPlatform()
            .start(
                () -> {
                  try {
                    Thread.sleep(1_000);
                  } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                  }
                  killed.kill();
                });
    Completion end = killed.await(Instant.now().plus(Duration.ofMinutes(2)));
    killer.join();
    assertThat(end.end()).as(end.toString()).isEqualTo(Completion.End.KILLED);
    assertThat(outputFiles(killed)).containsExactly(Map.entry("out/left.txt", "killed\n"));
  }

  @Test
  void aMemoryHogIsKilledInsideTheGuestWhichReportsIt() throws Exception {
    Completion end = hog.await(Instant.now().plus(Duration.ofMinutes(6)));
    assertThat(end.end()).as(end + " " + HOG_OUT.output()).isEqualTo(Completion.End.EXIT);
    assertThat(end.exitStatus()).hasValue(137);
    assertThat(end.detail()).contains("out of memory");
  }

  @Test
  void aForkBombStopsAtThePidsCap() throws Exception {
    Completion end = bomb.await(Instant.now().plus(Duration.ofMinutes(6)));
    String output = BOMB_OUT.output();
    assertThat(end.end()).as(end + " " + output).isEqualTo(Completion.End.EXIT);
    assertThat(output).as(output).containsPattern("started=[0-9]+");
    int started = Integer.parseInt(output.replaceAll("(?s).*started=([0-9]+).*", "$1"));
    // The group holds the shell, the subshell and the sleeps: at most 64 in all.
    assertThat(started).as(output).isBetween(1, 62);
  }

  @Test
  void theControlPlaneKilledMidRunTakesItsVmAndProxyAndLeavesTheRestToTheReaper() throws Exception {
    String runId = SUITE.newRunId();
    String java = ProcessHandle.current().info().command().orElse("java");
    Process controlPlane =
        new ProcessBuilder(
                java,
                "-cp",
                System.getProperty("java.class.path"),
                LaunchAndHang.class.getName(),
                runId)
            .redirectErrorStream(true)
            .start();
    try (BufferedReader lines =
        new BufferedReader(
            new InputStreamReader(controlPlane.getInputStream(), StandardCharsets.UTF_8))) {
      String line;
      boolean launched = false;
      StringBuilder seen = new StringBuilder();
      while (!launched && (line = lines.readLine()) != null) {
        seen.append(line).append('\n');
        launched = line.equals(LaunchAndHang.LAUNCHED);
      }
      assertThat(launched).as("the child control plane launched the VM: " + seen).isTrue();
    }
    controlPlane.destroyForcibly();
    assertThat(controlPlane.waitFor(30, TimeUnit.SECONDS)).isTrue();

    Path dir = backend.config().runDir().resolve(runId);
    RunRecord record = RunRecord.read(dir);
    assertThat(Path.of("/sys/class/net", record.tap())).exists();
    assertThat(MicroVmItSupport.fenceElementsOfTests()).contains("run " + runId);
    // Issue 26: the VMM and the proxy die with their control plane (a parent-death signal): a VM
    // left running would be unsupervised, its deadline kept by nobody. (LaunchAndHang says
    // "launched" only once the guest runs, so they were running when it was killed.) What they
    // leave on the host, the tap, the fence elements and the run directory, is the reaper's.
    await("the VMM and the proxy to end with their control plane")
        .atMost(Duration.ofSeconds(15))
        .pollInterval(Duration.ofMillis(100))
        .untilAsserted(
            () ->
                assertThat(processesNaming(dir))
                    .as("processes naming the run directory; vmm.log: " + vmmLog(dir))
                    .isEmpty());

    ReapReport report = backend.reap(Instant.now(), id -> !id.equals(runId));
    assertThat(report.problems()).isEmpty();
    assertThat(report.removedRunIds()).containsExactly(runId);
    assertThat(dir).doesNotExist();
    assertThat(Path.of("/sys/class/net", record.tap())).doesNotExist();
    assertThat(MicroVmItSupport.fenceElementsOfTests()).doesNotContain("run " + runId);
  }

  private static List<String> processesNaming(Path dir) {
    return ProcessHandle.allProcesses()
        .filter(
            p -> p.info().arguments().map(a -> String.join(" ", a)).orElse("").contains(dir + "/"))
        .map(p -> p.pid() + " " + p.info().command().orElse("?"))
        .toList();
  }

  @Test
  void thePlanNamesEveryObjectWithTheRulesAndTheVmmCommandLine() {
    SandboxPlan plan =
        backend.plan(
            SUITE.spec(
                SUITE.newRunId(),
                List.of("echo", "hi"),
                noEgress(),
                SUITE.smallCaps(),
                Duration.ofMinutes(1)));
    assertThat(plan.backend()).isEqualTo("microvm");
    assertThat(plan.runtime()).isEqualTo("qemu-" + backend.config().accel());
    assertThat(plan.manifests().stream().map(Manifest::kind))
        .containsExactly(
            "root-disk",
            "run-directory",
            "tap",
            "nftables-table",
            "nftables-elements",
            "proxy",
            "output-disk",
            "initramfs",
            "vmm");
    String table = (String) plan.manifests().get(3).body();
    assertThat(table)
        .contains("table inet agent_sandbox")
        .contains("iifname \"asbv*\" jump vm_refuse")
        .contains("meta l4proto tcp reject with tcp reset")
        .contains("ip daddr @private4 drop");
    assertThat(plan.manifests().get(8).body().toString())
        .contains("-sandbox")
        .contains("-nodefaults")
        .contains("microvm");
    assertThat(Files.exists(backend.config().runDir().resolve(plan.manifests().get(1).name())))
        .as("a plan creates nothing")
        .isFalse();
  }

  private static String vmmLog(Path runDir) {
    try {
      return Files.readString(runDir.resolve("vmm").resolve("vmm.log"));
    } catch (IOException e) {
      return "(unreadable: " + e.getMessage() + ")";
    }
  }
}
