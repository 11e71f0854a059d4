package dev.agentsandbox.backend.k8s;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.agentsandbox.backend.Completion;
import dev.agentsandbox.backend.SandboxListener;
import dev.agentsandbox.backend.UnableToLaunchSandboxException;
import dev.agentsandbox.backend.session.SessionSandbox;
import dev.agentsandbox.backend.session.StepEnd;
import dev.agentsandbox.backend.session.StepListener;
import dev.agentsandbox.backend.session.StepSpec;
import dev.agentsandbox.backend.session.UnableToRunStepException;
import dev.agentsandbox.backend.session.WorkspacePath;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy;
import io.fabric8.kubernetes.api.model.node.v1.RuntimeClassBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.dsl.NonDeletingOperation;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A session on the Kubernetes backend, against the mock API server for every object, with the
 * kubelet's part played by {@link SessionPod}: the pod's step runner and session relay run as real
 * processes on loopback from the generated spec, and the backend reaches them as it reaches a pod,
 * over mutual TLS with the keys it made for the session. Steps, files, decisions, the close with
 * its outputs, and each way an open or a session fails.
 */
@EnableKubernetesMockClient(crud = true)
class KubernetesSessionTest {
  static KubernetesClient client;
  static KubernetesMockServer server;

  @TempDir Path dir;
  private FakeCluster cluster;
  private final List<String> decisions = new CopyOnWriteArrayList<>();
  private final SandboxListener listener =
      new SandboxListener() {
        @Override
        public void onOutput(byte[] chunk) {}

        @Override
        public void onEgressDecision(String jsonLine) {
          decisions.add(jsonLine);
        }
      };

  @BeforeEach
  void setUp() {
    cluster = new FakeCluster(client, server);
    client
        .runtimeClasses()
        .resource(
            new RuntimeClassBuilder()
                .withNewMetadata()
                .withName("gvisor")
                .endMetadata()
                .withHandler("runsc")
                .build())
        .createOr(NonDeletingOperation::update);
  }

  @AfterEach
  void tearDown() {
    cluster.close();
  }

  static int freePort() throws Exception {
    try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return socket.getLocalPort();
    }
  }

  static KubernetesBackendConfig config(Duration ready) throws Exception {
    return Specs.config().toBuilder()
        .proxyReadyTimeout(Duration.ofSeconds(15))
        .pollInterval(Duration.ofMillis(20))
        .sessions(
            new SessionSettings(
                freePort(), freePort(), SessionSettings.DEFAULT.controlPlanePodLabels(), ready))
        .build();
  }

  private KubernetesBackend backend(Duration ready) throws Exception {
    return new KubernetesBackend(client, config(ready), Clock.systemUTC());
  }

  private static boolean namespaceExists(String runId) {
    return client.namespaces().withName(BundleFactory.namespaceOf(runId)).get() != null;
  }

  /** A step's output, its two streams apart. */
  static final class Output implements StepListener {
    final ByteArrayOutputStream out = new ByteArrayOutputStream();
    final ByteArrayOutputStream err = new ByteArrayOutputStream();

    @Override
    public synchronized void onOutput(byte[] chunk) {
      out.writeBytes(chunk);
    }

    @Override
    public synchronized void onErrorOutput(byte[] chunk) {
      err.writeBytes(chunk);
    }

    synchronized String out() {
      return out.toString(StandardCharsets.UTF_8);
    }
  }

  static StepEnd run(SessionSandbox session, int number, String script, Output output)
      throws InterruptedException {
    return session
        .exec(
            new StepSpec(number, List.of("sh", "-c", script), Map.of(), WorkspacePath.root(), null),
            output)
        .awaitEnd(Instant.now().plusSeconds(30))
        .orElseThrow();
  }

  @Test
  void aSessionTakesStepsAndFilesThroughItsRelayAndClosesWithItsOutputs() throws Exception {
    String id = "s1";
    cluster.serveProxy(id, "10.43.0.21");
    String first = "{\"decision\":\"allow\",\"host\":\"api.github.com\"}";
    String second = "{\"decision\":\"deny\",\"host\":\"pypi.org\"}";
    // Followed while the session is open, then read whole at its end.
    cluster.followProxyLog(id, first + "\n");
    cluster.logs(id, "", "proxy ready on :3128\n" + first + "\n" + second + "\n");
    KubernetesBackend backend = backend(Duration.ofSeconds(90));
    try (SessionPod pod = new SessionPod(client, server, id, dir).start()) {
      SessionSandbox session = backend.openSession(Specs.spec(id), listener);
      assertThat(session.runtime()).isEqualTo("runsc");
      // The step runs in the pod's environment: the proxy's address, the run's variables.
      Output output = new Output();
      StepEnd end = run(session, 1, "echo \"$HTTPS_PROXY $TASK $AGENT_SANDBOX_RUN_ID\"", output);
      assertThat(end.exitStatus()).hasValue(0);
      assertThat(output.out()).isEqualTo("http://10.43.0.21:3128 build s1\n");
      Awaitility.await("the followed decision")
          .atMost(Duration.ofSeconds(30))
          .until(() -> decisions.contains(first));

      byte[] content = new byte[300_000];
      new java.util.Random(5).nextBytes(content);
      WorkspacePath file = WorkspacePath.parse("app/data.bin");
      assertThat(session.putFile(file, new ByteArrayInputStream(content), 1 << 20))
          .isEqualTo(content.length);
      assertThat(Files.readAllBytes(pod.workspace.resolve("app/data.bin"))).isEqualTo(content);
      ByteArrayOutputStream back = new ByteArrayOutputStream();
      session.readFile(file, back, 1 << 20);
      assertThat(back.toByteArray()).isEqualTo(content);
      assertThat(run(session, 2, "echo done > out/result.txt", new Output()).exitStatus())
          .hasValue(0);

      // The relay's policy and pod are in the namespace; no Secret carries a key.
      String ns = BundleFactory.namespaceOf(id);
      assertThat(client.network().v1().networkPolicies().inNamespace(ns).list().getItems())
          .extracting(p -> p.getMetadata().getName())
          .contains(NetworkFence.SESSION_INGRESS);
      assertThat(client.secrets().inNamespace(ns).list().getItems()).isEmpty();

      CompletableFuture<Completion> ended =
          CompletableFuture.supplyAsync(
              () -> {
                try {
                  return session.await(Instant.now().plusSeconds(120));
                } catch (InterruptedException e) {
                  throw new IllegalStateException(e);
                }
              });
      Thread.sleep(100);
      session.kill();
      Completion completion = ended.get(120, TimeUnit.SECONDS);
      assertThat(completion.end()).isEqualTo(Completion.End.KILLED);
      assertThat(pod.runner().waitFor(30, TimeUnit.SECONDS)).as("the runner stopped").isTrue();
      try (InputStream tar = session.outputs().orElseThrow()) {
        assertThat(names(tar)).contains("out/result.txt");
      }
      assertThat(decisions).containsExactly(first, second);
      assertThatThrownBy(() -> run(session, 3, "true", new Output()))
          .isInstanceOf(UnableToRunStepException.class)
          .hasMessageContaining("it has ended");
      session.teardown();
      assertThat(namespaceExists(id)).isFalse();
    }
  }

  private static List<String> names(InputStream tar) throws Exception {
    List<String> names = new java.util.ArrayList<>();
    try (TarArchiveInputStream in = new TarArchiveInputStream(tar)) {
      TarArchiveEntry entry;
      while ((entry = in.getNextEntry()) != null) {
        names.add(entry.getName());
      }
    }
    return names;
  }

  @Test
  void theChannelCutWhileTheSessionIsOpenFailsItWithTheReason() throws Exception {
    String id = "s2";
    cluster.serveProxy(id, "10.43.0.22");
    KubernetesBackend backend = backend(Duration.ofSeconds(90));
    try (SessionPod pod = new SessionPod(client, server, id, dir).start()) {
      SessionSandbox session = backend.openSession(Specs.spec(id), listener);
      assertThat(run(session, 1, "true", new Output()).exitStatus()).hasValue(0);
      CompletableFuture<Completion> ended =
          CompletableFuture.supplyAsync(
              () -> {
                try {
                  return session.await(Instant.now().plusSeconds(120));
                } catch (InterruptedException e) {
                  throw new IllegalStateException(e);
                }
              });
      // The relay dies (its pod's network cut, its node lost): nothing reconnects.
      pod.relay().destroyForcibly();
      Completion completion = ended.get(120, TimeUnit.SECONDS);
      assertThat(completion.end()).isEqualTo(Completion.End.ERROR);
      assertThat(completion.detail()).contains("the session's channel to its step runner ended");
      assertThat(pod.runner().waitFor(30, TimeUnit.SECONDS))
          .as("the runner stops when its channel closes")
          .isTrue();
      session.teardown();
      assertThat(namespaceExists(id)).isFalse();
    }
  }

  @Test
  void anOpenWhoseRelayNeverAnnouncesItselfFailsAndLeavesNothing() throws Exception {
    String id = "s3";
    cluster.serveProxy(id, "10.43.0.23");
    KubernetesBackend backend = backend(Duration.ofSeconds(2));
    assertThatThrownBy(() -> backend.openSession(Specs.spec(id), listener))
        .isInstanceOf(UnableToLaunchSandboxException.class)
        .hasMessageContaining("opening the session of run s3 in namespace agent-run-s3")
        .hasMessageContaining("still waiting for the agent's pod to be created")
        .hasMessageContaining("/opt/relay and /opt/step-runner");
    assertThat(namespaceExists(id)).isFalse();
  }

  @Test
  void aRelayPresentingAnotherCertificateThanItsLogNamesIsRefused() throws Exception {
    String id = "s4";
    cluster.serveProxy(id, "10.43.0.24");
    KubernetesBackend backend = backend(Duration.ofSeconds(90));
    try (SessionPod pod =
        new SessionPod(client, server, id, dir).announcing("ab".repeat(32)).start()) {
      assertThatThrownBy(() -> backend.openSession(Specs.spec(id), listener))
          .isInstanceOf(UnableToLaunchSandboxException.class)
          .hasMessageContaining("connecting to the session relay of run s4 at 127.0.0.1")
          .hasMessageContaining("it presented a certificate other than the one its log announced");
      assertThat(namespaceExists(id)).isFalse();
      assertThat(pod.workspace.resolve("out")).isEmptyDirectory();
    }
  }

  @Test
  void aRelayThatNeverReachesItsRunnerIsReportedAsSuch() throws Exception {
    String id = "s5";
    cluster.serveProxy(id, "10.43.0.25");
    KubernetesBackend backend = backend(Duration.ofSeconds(90));
    try (SessionPod pod = new SessionPod(client, server, id, dir).withoutRunner().start()) {
      assertThatThrownBy(() -> backend.openSession(Specs.spec(id), listener))
          .isInstanceOf(UnableToLaunchSandboxException.class)
          .hasMessageContaining(
              "starting the session relay of run s5: it reports runner-unreachable")
          .hasMessageContaining("-c agent");
      assertThat(namespaceExists(id)).isFalse();
    }
  }

  @Test
  void aPodThatFailsItsRuntimeCheckFailsTheOpenAsAMismatch() throws Exception {
    String id = "s6";
    cluster.serveProxy(id, "10.43.0.26");
    KubernetesBackend backend = backend(Duration.ofSeconds(60));
    CompletableFuture<Throwable> failure =
        CompletableFuture.supplyAsync(
            () -> {
              try {
                backend.openSession(Specs.spec(id), listener);
                return null;
              } catch (RuntimeException e) {
                return e;
              }
            });
    Awaitility.await("the session's Job")
        .atMost(Duration.ofSeconds(30))
        .until(
            () ->
                client
                        .batch()
                        .v1()
                        .jobs()
                        .inNamespace(BundleFactory.namespaceOf(id))
                        .withName(BundleFactory.JOB)
                        .get()
                    != null);
    cluster.agentPodFailingRuntimeCheck(id, "this pod does not run under gVisor");
    Throwable thrown = failure.get(60, TimeUnit.SECONDS);
    assertThat(thrown)
        .isInstanceOf(UnableToLaunchSandboxException.class)
        .hasMessageContaining("does not run under gVisor, so no step can run");
    assertThat(namespaceExists(id)).isFalse();
  }

  @Test
  void onlyASessionsPlanShowsItsObjectsAndNoKey() throws Exception {
    KubernetesBackend backend = backend(Duration.ofSeconds(2));
    var run = backend.plan(Specs.spec("p1"));
    var session = backend.planSession(Specs.spec("p1"));
    assertThat(run.manifests())
        .extracting(m -> m.name())
        .doesNotContain(NetworkFence.SESSION_INGRESS);
    assertThat(session.manifests())
        .extracting(m -> m.kind() + " " + m.name())
        .containsSubsequence(
            "NetworkPolicy " + NetworkFence.PROXY_FENCE,
            "NetworkPolicy " + NetworkFence.SESSION_INGRESS,
            "ServiceAccount agent-run",
            "Job agent");
    assertThat(String.valueOf(session.manifests().get(session.manifests().size() - 1).body()))
        .contains(
            SessionContainers.RELAY, SessionWiring.PIN_AT_LAUNCH, SessionContainers.RUNNER_COPY);
    assertThat(String.valueOf(run.manifests().get(run.manifests().size() - 1).body()))
        .doesNotContain(SessionContainers.RELAY);
    assertThat(
            backend
                .sessionBundle(Specs.spec("p1"))
                .get(NetworkPolicy.class, NetworkFence.SESSION_INGRESS))
        .isNotNull();
  }
}
