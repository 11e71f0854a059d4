package dev.agentsandbox.backend.k8s;

import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.artifacts.CollectedOutputs;
import dev.agentsandbox.artifacts.CollectedOutputs.Dropped;
import dev.agentsandbox.artifacts.CollectedOutputs.Reason;
import dev.agentsandbox.artifacts.FolderArtifactStore;
import dev.agentsandbox.artifacts.OutputCaps;
import dev.agentsandbox.artifacts.OutputCollector;
import dev.agentsandbox.artifacts.StoredArtifact;
import dev.agentsandbox.backend.RunContract;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.batch.v1.Job;
import java.io.IOException;
import java.io.InputStream;
import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The collect sidecar the backend puts in the agent's pod, run for real: the exact container of a
 * generated Job (the proxy image's busybox, its command, its uid, a read-only root, no
 * capabilities, its memory-backed {@code /tmp}) on this host's Docker engine under runc and runsc,
 * with the out volume read-only as the kubelet mounts it. It is stopped as the kubelet stops a
 * sidecar (SIGTERM, {@code docker stop}); its log, read as the API's {@code pods/log} serves it,
 * must decode to a verified tar that the artifacts collector keeps with the right names, sizes and
 * hashes, refusing the link the workload left.
 */
class CollectSidecarIT {
  private static final String IMAGE = "agent-sandbox/proxy:dev";
  private static final int UID = (int) SandboxPods.NON_ROOT_UID;

  private static Container sidecar() {
    KubernetesBackendConfig config = KubernetesBackendConfig.defaults(IMAGE, "agent-sandbox");
    Job job =
        new BundleFactory(config)
            .build(Specs.withCredentials("cs1"), Optional.of("gvisor"), Optional.of("10.43.0.9"))
            .get(Job.class, BundleFactory.JOB);
    return job.getSpec().getTemplate().getSpec().getInitContainers().stream()
        .filter(c -> c.getName().equals(SandboxPods.COLLECT))
        .findFirst()
        .orElseThrow();
  }

  private static String run(List<String> command, int seconds)
      throws IOException, InterruptedException {
    // Into a file, not a pipe: the sidecar's log is larger than a pipe's buffer.
    Path file = Files.createTempFile("collect-it-", ".out");
    try {
      Process process =
          new ProcessBuilder(command)
              .redirectErrorStream(true)
              .redirectOutput(file.toFile())
              .start();
      if (!process.waitFor(seconds, TimeUnit.SECONDS)) {
        process.destroyForcibly();
        throw new AssertionError(command.get(0) + " did not end within " + seconds + " s");
      }
      String output = Files.readString(file, StandardCharsets.UTF_8);
      assertThat(process.exitValue())
          .as(command.subList(0, 2) + ": " + output.substring(0, Math.min(2000, output.length())))
          .isZero();
      return output;
    } finally {
      Files.deleteIfExists(file);
    }
  }

  /** The out volume as the agent leaves it in an emptyDir prepared for the pod's fsGroup. */
  private static Path outVolume(Path root, byte[] binary) throws Exception {
    Path out = Files.createDirectories(root.resolve("out"));
    Files.setAttribute(out, "unix:gid", UID);
    run(List.of("chmod", "2777", out.toString()), 10);
    Files.writeString(out.resolve("result.json"), "{\"ok\":true}\n");
    Path sub = Files.createDirectories(out.resolve("reports"));
    Files.setPosixFilePermissions(sub, PosixFilePermissions.fromString("rwxr-xr-x"));
    Files.write(sub.resolve("tests.bin"), binary);
    Files.createSymbolicLink(out.resolve("passwd"), Path.of("/etc/passwd"));
    return out;
  }

  private static String runAndStop(String runtime, Container sidecar, Path out, String name)
      throws Exception {
    List<String> command =
        new ArrayList<>(
            List.of(
                "docker",
                "run",
                "-d",
                "--name",
                name,
                "--label",
                "agent-sandbox.test=k8s-collect-sidecar",
                "--runtime",
                runtime,
                "--network",
                "none",
                "--read-only",
                "--cap-drop",
                "ALL",
                "--security-opt",
                "no-new-privileges",
                "--user",
                UID + ":" + UID,
                "--group-add",
                String.valueOf(UID),
                "--memory",
                SandboxPods.COLLECT_MEMORY_MB + "m",
                "-v",
                out + ":" + RunContract.OUT_DIR + ":ro",
                // The memory-backed emptyDir of its own.
                "--tmpfs",
                "/tmp:size=1m,mode=1777",
                "--entrypoint",
                sidecar.getCommand().get(0),
                sidecar.getImage()));
    command.addAll(sidecar.getCommand().subList(1, sidecar.getCommand().size()));
    run(command, 120);
    try {
      // As the kubelet stops a sidecar once the agent's container ended: SIGTERM, then a grace.
      run(
          List.of("docker", "stop", "-t", Long.toString(SandboxPods.AGENT_POD_GRACE_SECONDS), name),
          120);
      assertThat(run(List.of("docker", "inspect", "-f", "{{.State.ExitCode}}", name), 30).strip())
          .as(runtime + ": the sidecar ended by itself on SIGTERM, not killed")
          .isEqualTo("0");
      return run(List.of("docker", "logs", name), 60);
    } finally {
      new ProcessBuilder("docker", "rm", "-f", name).start().waitFor(60, TimeUnit.SECONDS);
    }
  }

  @Test
  void theSidecarStreamsTheOutFolderWhenStoppedUnderRuncAndRunsc(@TempDir Path dir)
      throws Exception {
    Container sidecar = sidecar();
    byte[] binary = new byte[300_000];
    new Random(11).nextBytes(binary);
    for (String runtime : List.of("runc", "runsc")) {
      Path root = Files.createDirectory(dir.resolve(runtime));
      Path out = outVolume(root, binary);
      String log =
          runAndStop(
              runtime,
              sidecar,
              out,
              "asb-collect-it-" + runtime + "-" + ProcessHandle.current().pid());
      Path tar = root.resolve("out.tar");
      OutputFrame.decode(new StringReader(log), tar, 64L << 20);
      CollectedOutputs collected;
      try (InputStream in = Files.newInputStream(tar)) {
        collected =
            new OutputCollector(
                    new FolderArtifactStore(root.resolve("store")), root.resolve("spool"))
                .collect("cs1", in, RunContract.OUT_ARCHIVE_FOLDER, new OutputCaps(1 << 20, 10));
      }
      assertThat(collected.kept())
          .as(runtime)
          .containsExactlyInAnyOrder(
              new StoredArtifact(
                  "result.json",
                  12,
                  OutputTars.sha256("{\"ok\":true}\n".getBytes(StandardCharsets.UTF_8))),
              new StoredArtifact("reports/tests.bin", binary.length, OutputTars.sha256(binary)));
      assertThat(collected.dropped())
          .as(runtime)
          .containsExactly(new Dropped("passwd", Reason.SYMLINK));
    }
  }
}
