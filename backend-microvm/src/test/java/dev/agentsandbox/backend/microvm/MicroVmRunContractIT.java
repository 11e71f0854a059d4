package dev.agentsandbox.backend.microvm;

import static dev.agentsandbox.backend.microvm.MicroVmItSupport.SUITE;
import static dev.agentsandbox.backend.microvm.MicroVmItSupport.cleanUpAndAssertNothingLeft;
import static dev.agentsandbox.testing.ItRuns.noEgress;
import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.backend.Completion;
import dev.agentsandbox.backend.RunCredential;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.testing.RecordingListener;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.stream.Stream;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The run contract in a real VM: credentials as 0400 files of the workload's user on a tmpfs (and
 * in the environment only when asked), {@code /workspace/out} there from the start and read back
 * off the output disk after the VM stopped, no credential value in anything the backend writes or
 * shows, and nothing of the run left after teardown. One VM.
 */
class MicroVmRunContractIT {
  private static MicroVmBackend backend;

  @BeforeAll
  static void host() {
    backend = MicroVmItSupport.requireBackend();
  }

  @AfterAll
  static void nothingLeft() throws Exception {
    if (backend != null) {
      cleanUpAndAssertNothingLeft(backend);
    }
  }

  private static String secret() {
    return "sv" + HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextLong());
  }

  @Test
  void theWorkloadReadsItsCredentialsAndLeavesOutputsReadOffTheDisk() throws Exception {
    String fileOnly = secret();
    String inEnv = secret();
    String script =
        "echo uid=$(id -u); ls -lnd \"$AGENT_SANDBOX_CREDENTIALS\" /workspace/out; "
            + "ls -ln \"$AGENT_SANDBOX_CREDENTIALS\"; "
            + "printf '{\"token\":\"%s\"}' \"$(cat $AGENT_SANDBOX_CREDENTIALS/api-token)\" "
            + "> \"$AGENT_SANDBOX_OUT/result.json\" && echo wrote; "
            + "ln -s /etc/passwd \"$AGENT_SANDBOX_OUT/link\"; "
            + "touch $AGENT_SANDBOX_CREDENTIALS/new 2>/dev/null && echo CREDENTIALS-WRITABLE; "
            + "[ \"$GATEWAY_TOKEN\" = \"$(cat $AGENT_SANDBOX_CREDENTIALS/gateway)\" ] && echo env-ok;"
            + " env | grep -q -F \"$(cat $AGENT_SANDBOX_CREDENTIALS/api-token)\" && echo FILE-IN-ENV;"
            + " echo out=$AGENT_SANDBOX_OUT";
    RunSpec spec =
        new RunSpec(
                SUITE.newRunId(),
                "it-agent",
                MicroVmItSupport.WORKLOAD_IMAGE,
                List.of("sh", "-c", script),
                Map.of(),
                noEgress(),
                SUITE.smallCaps(),
                Duration.ofMinutes(5),
                Instant.now().plus(Duration.ofMinutes(30)),
                false,
                Map.of("owner", "it-mvm9"),
                List.of())
            .withCredentials(
                List.of(
                    new RunCredential(
                        "api-token", fileOnly, Optional.empty(), Instant.now().plusSeconds(600)),
                    new RunCredential(
                        "gateway",
                        inEnv,
                        Optional.of("GATEWAY_TOKEN"),
                        Instant.now().plusSeconds(600))));
    assertThat(backend.deliversCredentials()).isTrue();
    RecordingListener listener = new RecordingListener();
    Map<String, String> outFiles = new TreeMap<>();
    Map<String, String> links = new TreeMap<>();
    Map<String, String> shown = new LinkedHashMap<>();
    shown.put("plan", backend.plan(spec).manifests().toString());
    Completion completion;
    try (MicroVmSandbox sandbox = (MicroVmSandbox) backend.launch(spec, listener)) {
      shown.put("VMM command line", commandLine(sandbox.vmmPid()));
      assertThat(sandbox.imageId())
          .as("the image that runs, by content id")
          .hasValue(backend.files().imageId(MicroVmItSupport.WORKLOAD_IMAGE));
      Path dir = backend.config().runDir().resolve(spec.runId());
      completion = sandbox.await(Instant.now().plus(Duration.ofMinutes(4)));
      try (InputStream outputs = sandbox.outputs().orElseThrow();
          TarArchiveInputStream tar = new TarArchiveInputStream(outputs)) {
        for (TarArchiveEntry e = tar.getNextEntry(); e != null; e = tar.getNextEntry()) {
          if (e.isSymbolicLink()) {
            links.put(e.getName(), e.getLinkName());
          } else if (e.isFile()) {
            outFiles.put(e.getName(), new String(tar.readAllBytes(), StandardCharsets.UTF_8));
          } else {
            outFiles.put(e.getName(), "<dir>");
          }
        }
      }
      // Everything the backend keeps beside the VM, but the two files that must hold the values:
      // the initramfs (readable by the VMM's uid alone) and the disk the workload wrote them on.
      try (Stream<Path> files = Files.walk(dir)) {
        for (Path file : files.filter(Files::isRegularFile).toList()) {
          String name = dir.relativize(file).toString();
          if (!name.equals("initramfs.cpio") && !name.equals("out.img")) {
            shown.put(name, Files.readString(file, StandardCharsets.ISO_8859_1));
          }
        }
      }
      assertThat(shown).containsKeys(RunRecord.FILE, "vmm/console.log", "proxy-policy.json");
      assertThat(Files.getPosixFilePermissions(dir.resolve("initramfs.cpio")))
          .containsExactly(java.nio.file.attribute.PosixFilePermission.OWNER_READ);
    }
    String output = listener.output();
    shown.put("output", output);
    shown.put("completion", completion.toString());
    assertThat(completion.end()).as(output).isEqualTo(Completion.End.EXIT);
    assertThat(completion.exitStatus()).as(output).hasValue(0);
    assertThat(output)
        .contains("uid=65534")
        .containsPattern(
            "dr-x------\\s+2\\s+65534\\s+65534\\s+\\d+ .*/run/agent-sandbox/credentials")
        .containsPattern("drwx------\\s+2\\s+65534\\s+65534\\s+\\d+ .*/workspace/out")
        .containsPattern("-r--------\\s+1\\s+65534\\s+65534\\s+\\d+ .*api-token")
        .containsPattern("-r--------\\s+1\\s+65534\\s+65534\\s+\\d+ .*gateway")
        .contains("wrote")
        .contains("env-ok")
        .contains("out=/workspace/out")
        .doesNotContain("CREDENTIALS-WRITABLE")
        .doesNotContain("FILE-IN-ENV");
    assertThat(outFiles)
        .containsEntry("out/", "<dir>")
        .containsEntry("out/result.json", "{\"token\":\"" + fileOnly + "\"}")
        .hasSize(2);
    assertThat(links).containsExactly(Map.entry("out/link", "/etc/passwd"));
    shown.forEach(
        (what, text) ->
            assertThat(text)
                .as("a credential's value in " + what)
                .doesNotContain(fileOnly)
                .doesNotContain(inEnv));
  }

  private static String commandLine(long pid) throws java.io.IOException {
    byte[] raw = Files.readAllBytes(Path.of("/proc", Long.toString(pid), "cmdline"));
    return new String(raw, StandardCharsets.UTF_8).replace('\0', ' ');
  }
}
