package dev.agentsandbox.relay;

import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.backend.session.PathInfo;
import dev.agentsandbox.backend.session.StepEnd;
import dev.agentsandbox.backend.session.StepSpec;
import dev.agentsandbox.backend.session.WorkspacePath;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A session's steps and files through the real relay and the real step runner, each its own process
 * on loopback, over TLS 1.3 with both ends pinned: what the Kubernetes backend's channel carries
 * into a pod, without the pod.
 */
class RelayProcessTest {
  @Test
  void aSessionsStepsAndFilesCrossTheRelay(@TempDir Path dir) throws Exception {
    try (LocalRelay pod = LocalRelay.start(dir);
        RunnerSession session = pod.connect()) {
      pod.awaitLog("agent-sandbox-relay session started");

      Recording output = new Recording();
      StepEnd end =
          session
              .client
              .exec(
                  new StepSpec(
                      1,
                      List.of(
                          "sh",
                          "-c",
                          "read line; echo \"got $line in $(pwd)\"; echo oops >&2; exit 4"),
                      Map.of(),
                      WorkspacePath.root(),
                      "hello\n".getBytes(StandardCharsets.UTF_8)),
                  output)
              .awaitEnd(Instant.now().plusSeconds(30))
              .orElseThrow();
      assertThat(end.end()).isEqualTo(StepEnd.End.EXIT);
      assertThat(end.exitStatus()).hasValue(4);
      assertThat(output.out()).isEqualTo("got hello in " + pod.workspace.toRealPath() + "\n");
      assertThat(output.err()).isEqualTo("oops\n");

      // A file of several frames each way (1 MiB), put then read back and listed.
      byte[] content = new byte[1 << 20];
      new Random(7).nextBytes(content);
      WorkspacePath file = WorkspacePath.parse("src/data.bin");
      assertThat(session.client.files().putFile(file, new ByteArrayInputStream(content), 2L << 20))
          .isEqualTo(content.length);
      assertThat(Files.readAllBytes(pod.workspace.resolve("src/data.bin"))).isEqualTo(content);
      ByteArrayOutputStream back = new ByteArrayOutputStream();
      session.client.files().readFile(file, back, 2L << 20);
      assertThat(back.toByteArray()).isEqualTo(content);
      PathInfo info = session.client.files().stat(file);
      assertThat(info.kind()).isEqualTo(PathInfo.Kind.FILE);
      assertThat(info.size()).isEqualTo(content.length);
      assertThat(session.client.files().list(WorkspacePath.parse("src"), 10))
          .extracting(i -> i.path().name())
          .containsExactly("data.bin");

      // A folder out as a tar, written by the host from what the runner walked.
      Files.writeString(pod.workspace.resolve("src/notes.txt"), "notes\n");
      ByteArrayOutputStream tar = new ByteArrayOutputStream();
      session.client.files().readFolder(WorkspacePath.parse("src"), tar, 4L << 20);
      try (TarArchiveInputStream in =
          new TarArchiveInputStream(new ByteArrayInputStream(tar.toByteArray()))) {
        TarArchiveEntry entry;
        java.util.Set<String> names = new java.util.TreeSet<>();
        while ((entry = in.getNextEntry()) != null) {
          names.add(entry.getName());
        }
        assertThat(names).containsExactly("data.bin", "notes.txt");
      }
      assertThat(session.violations).isEmpty();

      // Closing the session stops the runner (the pod's end) and ends the relay's session.
      session.client.bye();
      assertThat(pod.runner.waitFor(30, TimeUnit.SECONDS)).as("the runner exits").isTrue();
      pod.awaitLog("agent-sandbox-relay session ended");
      assertThat(pod.relay.isAlive()).as("the relay stays until the kubelet stops it").isTrue();
    }
  }
}
