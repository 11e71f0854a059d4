package dev.agentsandbox.backend.docker;

import static dev.agentsandbox.backend.docker.DockerItSupport.SUITE;
import static dev.agentsandbox.backend.docker.DockerItSupport.cleanUpAndAssertNothingLeft;
import static dev.agentsandbox.backend.docker.DockerItSupport.exec;
import static dev.agentsandbox.backend.docker.DockerItSupport.labelledResources;
import static dev.agentsandbox.testing.ItRuns.noEgress;
import static org.assertj.core.api.Assertions.assertThat;

import com.github.dockerjava.api.DockerClient;
import dev.agentsandbox.backend.Completion;
import dev.agentsandbox.backend.RunCredential;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.backend.Sandbox;
import dev.agentsandbox.backend.docker.DockerItSupport.ExecResult;
import dev.agentsandbox.testing.RecordingListener;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ThreadLocalRandom;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The run contract on a real daemon: credentials as 0400 files of the workload's user on a tmpfs
 * (and in the env only when asked), {@code /workspace/out} collected as a tar after the run, and
 * nothing of the run left after teardown.
 */
class DockerRunContractIT {
  private static DockerClient client;
  private static DockerBackend backend;

  @BeforeAll
  static void daemon() {
    client = DockerItSupport.requireDaemon();
    backend = new DockerBackend(client, DockerBackendConfig.defaults());
  }

  static List<String> runtimes() {
    return DockerItSupport.runtimes();
  }

  @AfterEach
  void nothingLabelledRemains() {
    cleanUpAndAssertNothingLeft(client);
  }

  private static String secret() {
    return "sv" + HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextLong());
  }

  @ParameterizedTest(name = "under {0}")
  @MethodSource("runtimes")
  void theWorkloadReadsItsCredentialsAndLeavesOutputsThatAreCollected(String runtime)
      throws Exception {
    String fileOnly = secret();
    String inEnv = secret();
    String runId = SUITE.newRunId();
    String script =
        "i=0; while [ ! -e /tmp/go ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; "
            + "echo uid=$(id -u); ls -ln \"$AGENT_SANDBOX_CREDENTIALS\"; "
            + "printf '{\"token\":\"%s\"}' \"$(cat $AGENT_SANDBOX_CREDENTIALS/api-token)\" "
            + "> \"$AGENT_SANDBOX_OUT/result.json\" && echo wrote; "
            + "ln -s /etc/passwd \"$AGENT_SANDBOX_OUT/link\"; "
            + "touch $AGENT_SANDBOX_CREDENTIALS/new 2>/dev/null && echo CREDENTIALS-WRITABLE; "
            + "[ \"$GATEWAY_TOKEN\" = \"$(cat $AGENT_SANDBOX_CREDENTIALS/gateway)\" ] && echo env-ok";
    RunSpec spec =
        new RunSpec(
                runId,
                "it-agent",
                DockerItSupport.WORKLOAD_IMAGE,
                List.of("sh", "-c", script),
                Map.of(),
                noEgress(),
                SUITE.smallCaps(),
                Duration.ofMinutes(2),
                Instant.now().plus(Duration.ofMinutes(30)),
                false,
                Map.of("owner", "it-docker9"),
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
    RecordingListener listener = new RecordingListener();
    Completion completion;
    Map<String, String> outFiles = new TreeMap<>();
    Map<String, String> links = new TreeMap<>();
    try (Sandbox sandbox = backend.launch(spec, listener, runtime)) {
      DockerSandbox docker = (DockerSandbox) sandbox;
      List<String> env =
          List.of(
              client.inspectContainerCmd(docker.workloadContainerId()).exec().getConfig().getEnv());
      assertThat(env)
          .contains("GATEWAY_TOKEN=" + inEnv)
          .contains("AGENT_SANDBOX_OUT=/workspace/out")
          .contains("AGENT_SANDBOX_CREDENTIALS=/run/agent-sandbox/credentials");
      assertThat(String.join("\n", env)).doesNotContain(fileOnly);
      assertThat(client.inspectContainerCmd(docker.proxyContainerId()).exec().getConfig().getUser())
          .isNotEqualTo("65534:65534");
      // The proxy holds the volumes but, under another uid, cannot read them.
      ExecResult fromProxy =
          exec(
              client,
              docker.proxyContainerId(),
              "cat /run/asb-hold/credentials/api-token; ls /run/asb-hold/workspace; id -u");
      assertThat(fromProxy.output()).doesNotContain(fileOnly).contains("Permission denied");
      ExecResult workspace =
          exec(client, docker.workloadContainerId(), "ls -lan /workspace /workspace/out");
      assertThat(workspace.output())
          .as("the empty out/ folder is there before the workload starts its work")
          .containsPattern("drwx------\\s+2\\s+65534\\s+65534\\s+\\d+ .*out");
      DockerItSupport.startDetached(client, docker.workloadContainerId(), "touch /tmp/go");
      completion = sandbox.await(Instant.now().plusSeconds(90));
      assertThat(listener.output()).as("the workload's output").contains("wrote");
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
    }
    String output = listener.output();
    assertThat(completion.end()).as(output).isEqualTo(Completion.End.EXIT);
    assertThat(completion.exitStatus()).as(output).hasValue(0);
    assertThat(output)
        .contains("uid=65534")
        .containsPattern("-r--------\\s+1\\s+65534\\s+65534\\s+\\d+ .*api-token")
        .containsPattern("-r--------\\s+1\\s+65534\\s+65534\\s+\\d+ .*gateway")
        .contains("wrote")
        .contains("env-ok")
        .doesNotContain("CREDENTIALS-WRITABLE")
        .doesNotContain(fileOnly)
        .doesNotContain(inEnv);
    assertThat(outFiles)
        .containsEntry("out/", "<dir>")
        .containsEntry("out/result.json", "{\"token\":\"" + fileOnly + "\"}");
    assertThat(links).containsEntry("out/link", "/etc/passwd");
    assertThat(labelledResources(client)).noneMatch(name -> name.contains(runId));
  }
}
