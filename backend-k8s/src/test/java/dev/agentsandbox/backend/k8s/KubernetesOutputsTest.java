package dev.agentsandbox.backend.k8s;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.agentsandbox.artifacts.CollectedOutputs;
import dev.agentsandbox.artifacts.CollectedOutputs.Dropped;
import dev.agentsandbox.artifacts.CollectedOutputs.Reason;
import dev.agentsandbox.artifacts.FolderArtifactStore;
import dev.agentsandbox.artifacts.OutputCaps;
import dev.agentsandbox.artifacts.OutputCollector;
import dev.agentsandbox.artifacts.StoredArtifact;
import dev.agentsandbox.backend.Completion;
import dev.agentsandbox.backend.Completion.End;
import dev.agentsandbox.backend.RunContract;
import dev.agentsandbox.backend.Sandbox;
import dev.agentsandbox.backend.SandboxException;
import dev.agentsandbox.backend.SandboxListener;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.mockwebserver.http.RecordedRequest;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A run's outputs on Kubernetes: read from the collect sidecar's log through the mock API server
 * (the kubelet's part played by {@link FakeCluster}), decoded, and kept by the artifacts module's
 * collector with the agent's caps, on every way a run ends.
 */
@EnableKubernetesMockClient(crud = true)
class KubernetesOutputsTest {
  static KubernetesClient client;
  static KubernetesMockServer server;

  @TempDir Path dir;
  private FakeCluster cluster;
  private final SandboxListener listener =
      new SandboxListener() {
        @Override
        public void onOutput(byte[] chunk) {}

        @Override
        public void onEgressDecision(String jsonLine) {}
      };

  private static final String RESULT = "{\"plan\":\"no changes\"}\n";
  private static final byte[] BINARY = binary();

  private static byte[] binary() {
    byte[] data = new byte[20_000];
    new java.util.Random(3).nextBytes(data);
    return data;
  }

  private static byte[] honestTar() {
    return new OutputTars()
        .folder("out")
        .file("out/result.json", RESULT)
        .folder("out/reports")
        .file("out/reports/tests.bin", BINARY)
        .bytes();
  }

  @BeforeEach
  void setUp() {
    cluster = new FakeCluster(client, server);
  }

  @AfterEach
  void tearDown() {
    cluster.close();
  }

  private Sandbox launch(String runId) {
    cluster.serveProxy(runId, "10.43.1.1");
    KubernetesBackend backend =
        new KubernetesBackend(
            client,
            Specs.config().toBuilder()
                .proxyReadyTimeout(Duration.ofSeconds(15))
                .pollInterval(Duration.ofMillis(20))
                .build(),
            Clock.systemUTC());
    return backend.launch(Specs.spec(runId), listener);
  }

  private CollectedOutputs collect(Sandbox sandbox, OutputCaps caps) throws IOException {
    FolderArtifactStore store = new FolderArtifactStore(dir.resolve("store"));
    try (InputStream tar = sandbox.outputs().orElseThrow()) {
      return new OutputCollector(store, dir.resolve("spool"))
          .collect(sandbox.runId(), tar, RunContract.OUT_ARCHIVE_FOLDER, caps);
    }
  }

  private static final OutputCaps ROOMY = new OutputCaps(1 << 20, 100);

  @Test
  void aFinishedRunsOutputsAreKeptWithTheirNamesSizesAndHashes() throws Exception {
    try (Sandbox sandbox = launch("o1")) {
      cluster.agentPod("o1", 0);
      cluster.logs("o1", "done\n", "");
      cluster.collectLog("o1", OutputTars.frame(honestTar()));
      cluster.finishJob("o1", "Complete", null);
      assertThat(sandbox.await(Instant.now().plusSeconds(30)).end()).isEqualTo(End.EXIT);
      CollectedOutputs collected = collect(sandbox, ROOMY);
      assertThat(collected.kept())
          .containsExactly(
              new StoredArtifact(
                  "result.json",
                  RESULT.length(),
                  OutputTars.sha256(RESULT.getBytes(StandardCharsets.UTF_8))),
              new StoredArtifact("reports/tests.bin", BINARY.length, OutputTars.sha256(BINARY)));
      assertThat(collected.dropped()).isEmpty();
      assertThat(Files.readAllBytes(dir.resolve("store/o1/files/reports/tests.bin")))
          .isEqualTo(BINARY);
    }
  }

  @Test
  void overTheCapsWhatFitsIsKeptAndTheRestNamed() throws Exception {
    try (Sandbox sandbox = launch("o2")) {
      cluster.agentPod("o2", 0);
      cluster.logs("o2", "", "");
      cluster.collectLog("o2", OutputTars.frame(honestTar()));
      cluster.finishJob("o2", "Complete", null);
      sandbox.await(Instant.now().plusSeconds(30));
      // By count: one file fits.
      CollectedOutputs byCount = collect(sandbox, new OutputCaps(1 << 20, 1));
      assertThat(byCount.kept()).extracting(StoredArtifact::path).containsExactly("result.json");
      assertThat(byCount.dropped())
          .containsExactly(new Dropped("reports/tests.bin", Reason.OVER_COUNT_CAP));
    }
    try (Sandbox sandbox = launch("o3")) {
      cluster.agentPod("o3", 0);
      cluster.logs("o3", "", "");
      cluster.collectLog("o3", OutputTars.frame(honestTar()));
      cluster.finishJob("o3", "Complete", null);
      sandbox.await(Instant.now().plusSeconds(30));
      // By size: the binary does not fit in 1 KiB.
      CollectedOutputs bySize = collect(sandbox, new OutputCaps(1024, 100));
      assertThat(bySize.kept()).extracting(StoredArtifact::path).containsExactly("result.json");
      assertThat(bySize.dropped())
          .containsExactly(new Dropped("reports/tests.bin", Reason.OVER_SIZE_CAP));
    }
  }

  @Test
  void hostileEntriesAreRefusedAndNothingIsWrittenOutsideTheRunsFolder() throws Exception {
    byte[] tar =
        new OutputTars()
            .folder("out")
            .symlink("out/passwd", "/etc/passwd")
            .hardlink("out/shadow", "/etc/shadow")
            .file("out/../escape.txt", "outside")
            .file("/etc/cron.d/evil", "outside")
            .file("out/sub/../../up.txt", "outside")
            .device("out/null")
            .fifo("out/pipe")
            .file("out/ok.txt", "fine\n")
            .bytes();
    try (Sandbox sandbox = launch("o4")) {
      cluster.agentPod("o4", 0);
      cluster.logs("o4", "", "");
      cluster.collectLog("o4", OutputTars.frame(tar));
      cluster.finishJob("o4", "Complete", null);
      sandbox.await(Instant.now().plusSeconds(30));
      CollectedOutputs collected = collect(sandbox, ROOMY);
      assertThat(collected.kept()).extracting(StoredArtifact::path).containsExactly("ok.txt");
      assertThat(collected.dropped())
          .extracting(Dropped::reason)
          .containsExactlyInAnyOrder(
              Reason.SYMLINK,
              Reason.HARDLINK,
              Reason.INVALID_PATH,
              Reason.INVALID_PATH,
              Reason.INVALID_PATH,
              Reason.DEVICE,
              Reason.FIFO);
    }
    try (Stream<Path> all = Files.walk(dir)) {
      assertThat(all.filter(Files::isRegularFile).map(p -> dir.relativize(p).toString()))
          .allMatch(p -> p.startsWith("store/o4/"), "every file under the run's folder")
          .contains("store/o4/files/ok.txt");
    }
  }

  @Test
  void aStreamWithAWrongHashIsRefusedWhole() throws Exception {
    byte[] tar = honestTar();
    String log =
        OutputFrame.BEGIN
            + "\n"
            + OutputTars.base64Lines(tar)
            + OutputTars.endLine(
                tar.length, OutputTars.sha256("other".getBytes(StandardCharsets.UTF_8)))
            + "\n";
    try (Sandbox sandbox = launch("o5")) {
      cluster.agentPod("o5", 0);
      cluster.logs("o5", "", "");
      cluster.collectLog("o5", log);
      cluster.finishJob("o5", "Complete", null);
      sandbox.await(Instant.now().plusSeconds(30));
      assertThatThrownBy(sandbox::outputs)
          .isInstanceOf(SandboxException.class)
          .hasMessageContaining("collect sidecar's stream of run o5 was refused")
          .hasMessageContaining("SHA-256 does not match");
    }
  }

  @Test
  void aStreamCutShortIsRefusedWhole() throws Exception {
    String full = OutputTars.frame(honestTar());
    String cut = full.substring(0, full.indexOf('\n', full.length() / 2) + 1);
    try (Sandbox sandbox = launch("o6")) {
      cluster.agentPod("o6", 0);
      cluster.logs("o6", "", "");
      cluster.collectLog("o6", cut);
      cluster.finishJob("o6", "Complete", null);
      sandbox.await(Instant.now().plusSeconds(30));
      assertThatThrownBy(sandbox::outputs)
          .isInstanceOf(SandboxException.class)
          .hasMessageContaining("ends without its end line");
    }
  }

  /**
   * The workload prints a perfect frame of its own on its stdout: that is the agent container's
   * log, which is never read for outputs. Only the sidecar's container log is.
   */
  @Test
  void framesTheWorkloadPrintsAreNeverTakenForOutputs() throws Exception {
    byte[] forged = new OutputTars().folder("out").file("out/forged.txt", "forged").bytes();
    try (Sandbox sandbox = launch("o7")) {
      cluster.agentPod("o7", 0);
      cluster.logs("o7", OutputTars.frame(forged), "");
      // No sidecar log served: the forged frame in the agent's log must not stand in for it.
      cluster.finishJob("o7", "Complete", null);
      sandbox.await(Instant.now().plusSeconds(30));
      assertThatThrownBy(sandbox::outputs).isInstanceOf(SandboxException.class);
    }
    try (Sandbox sandbox = launch("o8")) {
      cluster.agentPod("o8", 0);
      cluster.logs("o8", OutputTars.frame(forged), "");
      cluster.collectLog("o8", OutputTars.frame(honestTar()));
      cluster.finishJob("o8", "Complete", null);
      sandbox.await(Instant.now().plusSeconds(30));
      assertThat(collect(sandbox, ROOMY).kept())
          .extracting(StoredArtifact::path)
          .containsExactly("result.json", "reports/tests.bin");
    }
  }

  @Test
  void theBackendsDeadlineFollowsTheSidecarBeforeStoppingTheWorkloadThenCollects()
      throws Exception {
    drainRequests();
    try (Sandbox sandbox = launch("o9")) {
      cluster.agentPod("o9", null);
      cluster.logs("o9", "working\n", "");
      cluster.collectLog("o9", OutputTars.frame(honestTar()));
      Completion completion = sandbox.await(Instant.now().plusMillis(200));
      assertThat(completion.end()).isEqualTo(End.DEADLINE);
      assertThat(client.batch().v1().jobs().inNamespace("agent-run-o9").withName("agent").get())
          .isNull();
      assertThat(collect(sandbox, ROOMY).kept()).hasSize(2);
    }
    List<RecordedRequest> requests = drainRequests();
    List<String> calls =
        requests.stream()
            .map(r -> r.getMethod() + " " + r.getPath())
            .filter(
                c ->
                    c.equals("GET " + FakeCluster.collectLogPath("o9"))
                        || c.startsWith("DELETE /apis/batch/v1/namespaces/agent-run-o9/jobs/agent"))
            .toList();
    // Followed before the Job's deletion, so the stream written while the pod terminates is read.
    assertThat(calls).hasSize(2);
    assertThat(calls.get(0)).startsWith("GET ");
    assertThat(calls.get(1)).startsWith("DELETE ");
    // The pod is deleted with its own grace (the sidecar needs it to write), not at once.
    RecordedRequest delete =
        requests.stream().filter(r -> "DELETE".equals(r.getMethod())).findFirst().orElseThrow();
    assertThat(delete.getUtf8Body()).doesNotContain("gracePeriodSeconds");
  }

  @Test
  void aKillWhileAwaitingCollectsTheOutputs() throws Exception {
    try (Sandbox sandbox = launch("o10")) {
      cluster.agentPod("o10", null);
      cluster.logs("o10", "looping\n", "");
      cluster.collectLog("o10", OutputTars.frame(honestTar()));
      CompletableFuture<Completion> waiting =
          CompletableFuture.supplyAsync(
              () -> {
                try {
                  return sandbox.await(Instant.now().plusSeconds(60));
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                  throw new IllegalStateException(e);
                }
              });
      sandbox.kill();
      assertThat(waiting.get(30, TimeUnit.SECONDS).end()).isEqualTo(End.KILLED);
      assertThat(collect(sandbox, ROOMY).kept()).hasSize(2);
    }
  }

  @Test
  void aKillWithNobodyAwaitingStillCollectsTheOutputs() throws Exception {
    try (Sandbox sandbox = launch("o11")) {
      cluster.agentPod("o11", null);
      cluster.logs("o11", "", "");
      cluster.collectLog("o11", OutputTars.frame(honestTar()));
      sandbox.kill();
      assertThat(client.batch().v1().jobs().inNamespace("agent-run-o11").withName("agent").get())
          .isNull();
      // The garbage collector then deletes the pod: its log can only be read if it was followed
      // from before, as kill() does.
      client.pods().inNamespace("agent-run-o11").withName(FakeCluster.AGENT_POD).delete();
      assertThat(collect(sandbox, ROOMY).kept()).hasSize(2);
    }
  }

  @Test
  void kubernetesOwnDeadlineCollectsTooWhileThePodRemains() throws Exception {
    try (Sandbox sandbox = launch("o12")) {
      cluster.agentPod("o12", 137);
      cluster.logs("o12", "", "");
      cluster.collectLog("o12", OutputTars.frame(honestTar()));
      cluster.finishJob("o12", "Failed", "DeadlineExceeded");
      assertThat(sandbox.await(Instant.now().plusSeconds(30)).end()).isEqualTo(End.DEADLINE);
      assertThat(collect(sandbox, ROOMY).kept()).hasSize(2);
    }
  }

  @Test
  void aRunWhosePodNeverStartedSaysSo() throws Exception {
    try (Sandbox sandbox = launch("o13")) {
      cluster.finishJob("o13", "Failed", "BackoffLimitExceeded");
      sandbox.await(Instant.now().plusSeconds(30));
      assertThatThrownBy(sandbox::outputs)
          .isInstanceOf(SandboxException.class)
          .hasMessageContaining("no longer exists or never started");
    }
  }

  private static List<RecordedRequest> drainRequests() throws InterruptedException {
    List<RecordedRequest> requests = new ArrayList<>();
    RecordedRequest request;
    for (int i = 0;
        i < 10_000 && (request = server.takeRequest(1, TimeUnit.MILLISECONDS)) != null;
        i++) {
      requests.add(request);
    }
    return requests;
  }
}
