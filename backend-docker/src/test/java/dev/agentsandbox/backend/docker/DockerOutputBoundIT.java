package dev.agentsandbox.backend.docker;

import static dev.agentsandbox.backend.docker.DockerItSupport.SUITE;
import static dev.agentsandbox.backend.docker.DockerItSupport.cleanUpAndAssertNothingLeft;
import static dev.agentsandbox.testing.ItRuns.noEgress;
import static org.assertj.core.api.Assertions.assertThat;

import com.github.dockerjava.api.DockerClient;
import dev.agentsandbox.artifacts.CollectedOutputs;
import dev.agentsandbox.artifacts.FolderArtifactStore;
import dev.agentsandbox.artifacts.OutputCaps;
import dev.agentsandbox.artifacts.OutputCollector;
import dev.agentsandbox.artifacts.StoredArtifact;
import dev.agentsandbox.backend.Completion;
import dev.agentsandbox.backend.RunContract;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.backend.Sandbox;
import dev.agentsandbox.policy.config.OutputLimits;
import dev.agentsandbox.testing.RecordingListener;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Issue 26 item 2, tried as the attacker did: a sparse file of 3 GiB apparent size in a 64 MiB
 * workspace's {@code /workspace/out}, which the daemon's archive API sends byte for byte. The
 * control plane must read no more than the agent's cap plus room for headers, stage no more than
 * that in its temporary folder, and still keep what came before the cut and name the rest.
 */
class DockerOutputBoundIT {
  /** The command, after a file that fits and before one the cut hides. */
  private static final String ATTACK =
      "echo kept > /workspace/out/a.txt"
          + " && dd if=/dev/zero of=/workspace/out/big bs=1 count=1 seek=3221225471 2>/dev/null"
          + " && echo hidden > /workspace/out/z.txt && ls -ls /workspace/out";

  private static final OutputLimits CAPS = new OutputLimits(1L << 20, 10);

  private static DockerClient client;

  @TempDir Path dir;

  @BeforeAll
  static void daemon() {
    client = DockerItSupport.requireDaemon();
  }

  @AfterAll
  static void nothingLeft() {
    if (client != null) {
      cleanUpAndAssertNothingLeft(client);
    }
  }

  static Stream<String> runtimes() {
    return DockerItSupport.runtimes().stream();
  }

  @ParameterizedTest(name = "under {0}")
  @MethodSource("runtimes")
  void aSparseFileIsReadNoFurtherThanTheCapPlusHeaders(String runtime) throws Exception {
    String runId = SUITE.newRunId();
    RunSpec run =
        SUITE
            .spec(
                runId,
                List.of("sh", "-c", ATTACK),
                noEgress(),
                SUITE.smallCaps(),
                Duration.ofMinutes(3))
            .withOutputs(CAPS);
    long bound = OutputArchive.bound(CAPS);
    DockerBackend backend = new DockerBackend(client, DockerBackendConfig.defaults());
    RecordingListener listener = new RecordingListener();
    CollectedOutputs collected;
    try (Sandbox sandbox = backend.launch(run, listener, runtime)) {
      Completion completion = sandbox.await(Instant.now().plus(Duration.ofMinutes(2)));
      assertThat(completion.end()).as(listener.output()).isEqualTo(Completion.End.EXIT);
      assertThat(listener.output())
          .as("the workload made the sparse file (3 GiB apparent, a few KiB used)")
          .contains("3221225472");

      List<Path> staged = staged(runId);
      assertThat(staged).as("one staged archive of run %s", runId).hasSize(1);
      assertThat(Files.size(staged.get(0)))
          .as("staged in the control plane's temporary folder: at most the cap plus headers")
          .isLessThanOrEqualTo(bound);

      long served;
      try (InputStream in = sandbox.outputs().orElseThrow()) {
        served = countUntilTheCut(in);
      }
      assertThat(served).as("bytes handed on before the cut").isEqualTo(bound);

      FolderArtifactStore store = new FolderArtifactStore(dir.resolve("artifacts"));
      try (InputStream in = sandbox.outputs().orElseThrow()) {
        collected =
            new OutputCollector(store, dir.resolve("spool"))
                .collect(
                    runId,
                    in,
                    RunContract.OUT_ARCHIVE_FOLDER,
                    new OutputCaps(CAPS.maxBytes(), CAPS.maxFiles()));
      }
    }
    assertThat(collected.kept()).extracting(StoredArtifact::path).containsExactly("a.txt");
    assertThat(collected.dropped())
        .extracting(CollectedOutputs.Dropped::path, CollectedOutputs.Dropped::reason)
        .containsExactly(
            org.assertj.core.groups.Tuple.tuple("big", CollectedOutputs.Reason.OVER_SIZE_CAP),
            org.assertj.core.groups.Tuple.tuple(
                "(the rest of the archive: the archive of /workspace/out was cut at "
                    + bound
                    + " bytes: past outputs.max_bytes plus room for tar headers, nothing more is"
                    + " read)",
                CollectedOutputs.Reason.TRUNCATED));
    assertThat(staged(runId)).as("the staged archive goes with the sandbox").isEmpty();
  }

  private static List<Path> staged(String runId) throws IOException {
    Path tmp = Path.of(System.getProperty("java.io.tmpdir"));
    try (Stream<Path> files = Files.list(tmp)) {
      return files.filter(p -> p.getFileName().toString().startsWith("asb-" + runId)).toList();
    }
  }

  /** Reads until the stream says it was cut; the count of bytes before. */
  private static long countUntilTheCut(InputStream in) {
    byte[] buffer = new byte[64 * 1024];
    long total = 0;
    try {
      for (int n = in.read(buffer); n >= 0; n = in.read(buffer)) {
        total += n;
      }
    } catch (IOException cut) {
      assertThat(cut).hasMessageContaining("was cut at");
      return total;
    }
    throw new AssertionError("the archive of a 3 GiB sparse file ended without a cut: " + total);
  }
}
