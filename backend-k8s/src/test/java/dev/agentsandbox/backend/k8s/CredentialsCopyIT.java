package dev.agentsandbox.backend.k8s;

import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.backend.RunContract;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.batch.v1.Job;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The credentials copy the backend puts in the agent's pod, run for real: the exact init container
 * of a generated Job (its image's busybox, its command, its uid and hardening) on this host's
 * Docker engine, under runc and under runsc, reading a folder laid out as the kubelet lays out a
 * Secret volume with an fsGroup (files 0440 root:65532 behind {@code ..data} links) and writing
 * into a folder as the kubelet prepares an emptyDir with an fsGroup (root:65532, set-group-id,
 * 0777). Each file it leaves must be the workload's own: mode 0400, uid 65532, the exact value.
 */
class CredentialsCopyIT {
  private static final String IMAGE = "agent-sandbox/proxy:dev";
  private static final int UID = (int) SandboxPods.NON_ROOT_UID;

  private static Container copy() {
    KubernetesBackendConfig config = KubernetesBackendConfig.defaults(IMAGE, "agent-sandbox");
    Job job =
        new BundleFactory(config)
            .build(Specs.withCredentials("cc1"), Optional.of("gvisor"), Optional.of("10.43.0.9"))
            .get(Job.class, BundleFactory.JOB);
    return job.getSpec().getTemplate().getSpec().getInitContainers().stream()
        .filter(c -> c.getName().equals(SandboxPods.CREDENTIALS_COPY))
        .findFirst()
        .orElseThrow();
  }

  /** A Secret volume as the kubelet's atomic writer leaves it, after the fsGroup pass. */
  private static Path secretVolume(Path root) throws IOException {
    Path volume = Files.createDirectories(root.resolve("secret"));
    Path stamp = Files.createDirectory(volume.resolve("..2026_11_30_23_00_00.123456789"));
    Files.writeString(stamp.resolve("run-token"), Specs.TOKEN);
    Files.writeString(stamp.resolve("llm.jwt"), Specs.JWT);
    Files.createSymbolicLink(volume.resolve("..data"), stamp.getFileName());
    for (String key : List.of("run-token", "llm.jwt")) {
      Path file = stamp.resolve(key);
      Files.setAttribute(file, "unix:gid", UID);
      Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("r--r-----"));
      Files.createSymbolicLink(volume.resolve(key), Path.of("..data", key));
    }
    Files.setAttribute(stamp, "unix:gid", UID);
    Files.setAttribute(volume, "unix:gid", UID);
    return volume;
  }

  /** An emptyDir as the kubelet prepares it for a pod with an fsGroup. */
  private static Path emptyDir(Path root) throws IOException, InterruptedException {
    Path dir = Files.createDirectories(root.resolve("credentials"));
    Files.setAttribute(dir, "unix:gid", UID);
    Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxrwxrwx"));
    // PosixFilePermissions cannot say set-group-id; chmod can.
    run(List.of("chmod", "2777", dir.toString()), 10);
    return dir;
  }

  private static String run(List<String> command, int seconds)
      throws IOException, InterruptedException {
    Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
    if (!process.waitFor(seconds, TimeUnit.SECONDS)) {
      process.destroyForcibly();
      throw new AssertionError(command.get(0) + " did not end within " + seconds + " s");
    }
    String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(process.exitValue()).as(command + ": " + output).isZero();
    return output;
  }

  private static void copyUnder(String runtime, Container copy, Path secret, Path out)
      throws IOException, InterruptedException {
    List<String> command =
        new ArrayList<>(
            List.of(
                "docker",
                "run",
                "--rm",
                "--label",
                "agent-sandbox.test=k8s-credentials-copy",
                "--runtime",
                runtime,
                "--network",
                "none",
                "--read-only",
                "--cap-drop",
                "ALL",
                "--security-opt",
                "no-new-privileges",
                // runAsUser, runAsGroup and the fsGroup as a supplementary group, as the kubelet.
                "--user",
                UID + ":" + UID,
                "--group-add",
                String.valueOf(UID),
                "-v",
                secret + ":" + SandboxPods.CREDENTIALS_SECRET_MOUNT + ":ro",
                "-v",
                out + ":" + RunContract.CREDENTIALS_DIR,
                "--entrypoint",
                copy.getCommand().get(0),
                copy.getImage()));
    command.addAll(copy.getCommand().subList(1, copy.getCommand().size()));
    run(command, 120);
  }

  @Test
  void everyCredentialBecomesA0400FileOfTheWorkloadsUidUnderRuncAndRunsc(@TempDir Path dir)
      throws Exception {
    Container copy = copy();
    assertThat(copy.getSecurityContext().getReadOnlyRootFilesystem()).isTrue();
    for (String runtime : List.of("runc", "runsc")) {
      Path root = Files.createDirectory(dir.resolve(runtime));
      Path secret = secretVolume(root);
      Path out = emptyDir(root);
      copyUnder(runtime, copy, secret, out);
      for (String name : List.of("run-token", "llm.jwt")) {
        Path file = out.resolve(name);
        assertThat(Files.isSymbolicLink(file)).as(runtime + " " + name).isFalse();
        assertThat(Files.isRegularFile(file)).as(runtime + " " + name).isTrue();
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(file)))
            .as(runtime + " " + name + " mode")
            .isEqualTo("r--------");
        assertThat(Files.getAttribute(file, "unix:uid")).as(runtime + " " + name).isEqualTo(UID);
        assertThat(Files.getAttribute(file, "unix:gid")).as(runtime + " " + name).isEqualTo(UID);
      }
      assertThat(Files.readString(out.resolve("run-token"))).isEqualTo(Specs.TOKEN);
      assertThat(Files.readString(out.resolve("llm.jwt"))).isEqualTo(Specs.JWT);
      try (var listed = Files.list(out)) {
        assertThat(listed.map(p -> p.getFileName().toString()))
            .containsExactlyInAnyOrder("run-token", "llm.jwt");
      }
    }
  }
}
