package dev.agentsandbox.cli.drill;

import static org.assertj.core.api.Assertions.assertThat;

import com.github.dockerjava.api.DockerClient;
import dev.agentsandbox.backend.Labels;
import dev.agentsandbox.backend.docker.DockerClients;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** {@link DrillIT} on this host: bounded host commands, and what a drill's runs may not leave. */
final class DrillItHost {
  private DrillItHost() {}

  static void assertNothingLeft(List<String> runIds) {
    DockerClient docker = DockerClients.fromEnvironment();
    for (String runId : runIds) {
      assertThat(
              docker
                  .listContainersCmd()
                  .withShowAll(true)
                  .withLabelFilter(Map.of(Labels.RUN_ID, runId))
                  .exec())
          .as("containers left by run " + runId)
          .isEmpty();
      assertThat(
              docker
                  .listNetworksCmd()
                  .withFilter("label", List.of(Labels.RUN_ID + "=" + runId))
                  .exec())
          .as("networks left by run " + runId)
          .isEmpty();
      assertThat(
              docker
                  .listVolumesCmd()
                  .withFilter("label", List.of(Labels.RUN_ID + "=" + runId))
                  .exec()
                  .getVolumes())
          .as("volumes left by run " + runId)
          .isNullOrEmpty();
    }
  }

  /**
   * Nothing of the microVM runs is left on this host: no run directory, no tap whose alias names
   * the run, no nftables element naming it, no process whose command line names its directory.
   */
  static void assertNoMicroVmLeft(List<String> runIds, Path runDir) throws Exception {
    String table = output("nft", "list", "table", "inet", "agent_sandbox");
    List<String> aliases = new ArrayList<>();
    try (var links = Files.list(Path.of("/sys/class/net"))) {
      for (Path link : links.toList()) {
        Path alias = link.resolve("ifalias");
        if (Files.isReadable(alias)) {
          aliases.add(link.getFileName() + " " + Files.readString(alias).strip());
        }
      }
    }
    for (String runId : runIds) {
      assertThat(runDir.resolve(runId)).as("run directory of " + runId).doesNotExist();
      assertThat(aliases).as("taps of run " + runId).noneMatch(a -> a.endsWith("run=" + runId));
      assertThat(table.lines().filter(l -> l.contains("run " + runId)).toList())
          .as("nftables elements of run " + runId)
          .isEmpty();
      assertThat(
              ProcessHandle.allProcesses()
                  .filter(
                      p ->
                          p.info()
                              .arguments()
                              .map(a -> String.join(" ", a))
                              .orElse("")
                              .contains(runDir.resolve(runId) + "/"))
                  .map(ProcessHandle::pid)
                  .toList())
          .as("processes of run " + runId)
          .isEmpty();
    }
  }

  static String output(String... command) throws IOException, InterruptedException {
    Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
    String text = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!process.waitFor(30, TimeUnit.SECONDS)) {
      process.destroyForcibly();
    }
    return text;
  }

  static int run(String... command) throws IOException, InterruptedException {
    Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
    process.getInputStream().readAllBytes();
    if (!process.waitFor(30, TimeUnit.SECONDS)) {
      process.destroyForcibly();
      return -1;
    }
    return process.exitValue();
  }

  static void check(int status, String what) throws IOException {
    if (status != 0) {
      throw new IOException(what + " failed with status " + status + " (the ITs run as root)");
    }
  }
}
