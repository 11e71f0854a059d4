package dev.agentsandbox.backend.k8s;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.agentsandbox.backend.Completion;
import dev.agentsandbox.backend.Completion.End;
import dev.agentsandbox.backend.Isolation;
import dev.agentsandbox.backend.Manifest;
import dev.agentsandbox.backend.Probe;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.backend.Sandbox;
import dev.agentsandbox.backend.SandboxListener;
import dev.agentsandbox.backend.SandboxPlan;
import dev.agentsandbox.backend.UnableToLaunchSandboxException;
import io.fabric8.kubernetes.api.model.ConfigMapBuilder;
import io.fabric8.kubernetes.api.model.NamespaceBuilder;
import io.fabric8.kubernetes.api.model.batch.v1.Job;
import io.fabric8.kubernetes.api.model.node.v1.RuntimeClassBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.mockwebserver.http.RecordedRequest;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The backend against fabric8's mock API server in CRUD mode, with {@link FakeCluster} as kubelet.
 */
@EnableKubernetesMockClient(crud = true)
class KubernetesBackendTest {
  private static final String PROXY_LOG =
      """
      agent-sandbox proxy ready on 0.0.0.0:3128
      {"run_id":"r1","host":"api.github.com","decision":"allow"}
      {"run_id":"r1","host":"evil.example","decision":"deny"}
      """;

  static KubernetesClient client;
  static KubernetesMockServer server;

  private FakeCluster cluster;
  private final Recorder listener = new Recorder();

  @BeforeEach
  void setUp() {
    cluster = new FakeCluster(client, server);
  }

  @AfterEach
  void tearDown() {
    cluster.close();
    client.runtimeClasses().withName("gvisor").delete();
  }

  private KubernetesBackend backend(KubernetesBackendConfig config) {
    return new KubernetesBackend(
        client,
        config.toBuilder()
            .proxyReadyTimeout(Duration.ofSeconds(15))
            .pollInterval(Duration.ofMillis(20))
            .build(),
        Clock.systemUTC());
  }

  private KubernetesBackend backend() {
    return backend(Specs.config());
  }

  private static void installGvisor() {
    installRuntimeClass("runsc");
  }

  private static void installRuntimeClass(String handler) {
    client
        .runtimeClasses()
        .resource(
            new RuntimeClassBuilder()
                .withNewMetadata()
                .withName("gvisor")
                .endMetadata()
                .withHandler(handler)
                .build())
        .createOr(io.fabric8.kubernetes.client.dsl.NonDeletingOperation::update);
  }

  private static boolean namespaceExists(String runId) {
    return client.namespaces().withName(BundleFactory.namespaceOf(runId)).get() != null;
  }

  @Test
  void probeReportsGvisorWhenTheRuntimeClassExists() {
    installGvisor();
    Probe probe = backend().probe();
    assertThat(probe.available()).isTrue();
    assertThat(probe.isolation()).isEqualTo(Isolation.GVISOR);
    assertThat(probe.runtime()).isEqualTo("runsc");
  }

  @Test
  void aRuntimeClassWhoseHandlerIsNotTrustedCountsAsAbsent() {
    // Named gvisor, but it runs pods under runc: hostile code must never silently run so.
    installRuntimeClass("runc");
    Probe plain = backend().probe();
    assertThat(plain.isolation()).isEqualTo(Isolation.CONTAINER);
    assertThat(plain.runtime()).isEqualTo(KubernetesBackend.NODE_DEFAULT_RUNTIME);
    assertThat(plain.detail())
        .contains("has handler runc, not one of the trusted gVisor handlers [runsc]");
    Probe strict = backend(Specs.config().toBuilder().requireRuntimeClass(true).build()).probe();
    assertThat(strict.available()).isFalse();
    assertThat(strict.detail()).contains("has handler runc");
    SandboxPlan plan = backend().plan(Specs.spec("h0"));
    assertThat(plan.isolation()).isEqualTo(Isolation.CONTAINER);
    assertThat(String.valueOf(plan.manifests().get(plan.manifests().size() - 1).body()))
        .doesNotContain("runtimeClassName", SandboxPods.RUNTIME_CHECK);
    assertThatThrownBy(() -> backend().launch(Specs.spec("h1", List.of(), true), listener))
        .isInstanceOf(UnableToLaunchSandboxException.class)
        .hasMessageContaining("refused")
        .hasMessageContaining("has handler runc");
    assertThat(namespaceExists("h1")).isFalse();
    // An operator who installed runsc under another handler name says so.
    KubernetesBackend trusting =
        backend(
            Specs.config().toBuilder().trustedRuntimeHandlers(List.of("runsc", "runc")).build());
    assertThat(trusting.probe().isolation()).isEqualTo(Isolation.GVISOR);
  }

  @Test
  void aPodThatIsNotUnderGvisorEndsTheRunAsARuntimeMismatch() throws Exception {
    installGvisor();
    cluster.serveProxy("m1", "10.43.7.10");
    Sandbox sandbox = backend().launch(Specs.spec("m1"), listener);
    Job job =
        client.batch().v1().jobs().inNamespace("agent-run-m1").withName(BundleFactory.JOB).get();
    // The runtime check first; the collect sidecar last, so it starts only after the check.
    assertThat(job.getSpec().getTemplate().getSpec().getInitContainers())
        .extracting(c -> c.getName())
        .containsExactly(SandboxPods.RUNTIME_CHECK, SandboxPods.COLLECT);
    cluster.agentPodFailingRuntimeCheck(
        "m1", "agent-sandbox runtime check: this pod does not run under gVisor");
    cluster.finishJob("m1", "Failed", "BackoffLimitExceeded");
    Completion completion = sandbox.await(Instant.now().plusSeconds(30));
    assertThat(completion.end()).isEqualTo(End.RUNTIME_MISMATCH);
    assertThat(completion.exitStatus()).isEmpty();
    assertThat(completion.detail())
        .contains("does not run under gVisor", "never ran", "node-7", "exit status 86");
    sandbox.teardown();
  }

  @Test
  void probeFallsBackToTheNodeRuntimeOnlyWhenAllowed() {
    Probe plain = backend().probe();
    assertThat(plain.available()).isTrue();
    assertThat(plain.isolation()).isEqualTo(Isolation.CONTAINER);
    assertThat(plain.detail()).contains("require_runtime_class");
    Probe strict = backend(Specs.config().toBuilder().requireRuntimeClass(true).build()).probe();
    assertThat(strict.available()).isFalse();
    assertThat(strict.detail())
        .contains("RuntimeClass gvisor not found", "runtimeclass-gvisor.yaml");
  }

  @Test
  void probeOfAnUnreachableApiServerSaysWhereItLooked() {
    try (KubernetesClient nowhere =
        new io.fabric8.kubernetes.client.KubernetesClientBuilder()
            .withConfig(
                new io.fabric8.kubernetes.client.ConfigBuilder()
                    .withMasterUrl("https://127.0.0.1:1")
                    .withRequestTimeout(2000)
                    .withConnectionTimeout(2000)
                    .withRequestRetryBackoffLimit(0)
                    .build())
            .build()) {
      Probe probe = new KubernetesBackend(nowhere, Specs.config(), Clock.systemUTC()).probe();
      assertThat(probe.available()).isFalse();
      assertThat(probe.detail()).contains("https://127.0.0.1:1", "failed", "ClusterRole");
    }
  }

  @Test
  void planWithoutAnAnsweringApiServerWaitsOnlyTheProbeTimeOutAndSaysItIsStale() throws Exception {
    // A loopback listener that never answers: the TLS handshake hangs, as against a black-holed
    // API server, and fabric8 would retry for tens of seconds.
    try (ServerSocket silent = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        KubernetesClient nowhere =
            new io.fabric8.kubernetes.client.KubernetesClientBuilder()
                .withConfig(
                    new io.fabric8.kubernetes.client.ConfigBuilder(
                            io.fabric8.kubernetes.client.Config.empty())
                        .withMasterUrl("https://127.0.0.1:" + silent.getLocalPort())
                        .build())
                .build()) {
      TestClock clock = new TestClock(Instant.parse("2030-01-01T00:00:00Z"));
      KubernetesBackend backend = new KubernetesBackend(nowhere, Specs.config(), clock);
      long started = System.nanoTime();
      SandboxPlan plan = backend.plan(Specs.spec("s1"));
      long planMillis = (System.nanoTime() - started) / 1_000_000;
      assertThat(plan.runtime())
          .contains(
              "not verified",
              "no answer from the Kubernetes API at https://127.0.0.1:" + silent.getLocalPort(),
              "within 1.5 s");
      // The plan shows the bundle a launch would need: the RuntimeClass and the runtime check.
      assertThat(plan.isolation()).isEqualTo(Isolation.GVISOR);
      assertThat(String.valueOf(plan.manifests().get(plan.manifests().size() - 1).body()))
          .contains("runtimeClassName=gvisor", SandboxPods.RUNTIME_CHECK);

      clock.advance(Duration.ofSeconds(4));
      Probe probe = backend.probe();
      assertThat(probe.available()).isFalse();
      assertThat(probe.detail()).contains("no answer", "(as of 4 s ago; answers are kept 10 s)");
      clock.advance(Duration.ofSeconds(10));
      // Past the cache's lifetime: the one lookup still in flight is waited on again, not doubled.
      assertThat(backend.plan(Specs.spec("s2")).runtime()).contains("no answer");
      assertThat(backend.runtimeLookupsStarted()).isEqualTo(1);
      System.out.println("plan against a silent API server answered in " + planMillis + " ms");
    }
  }

  @Test
  void planShowsTheWholeBundleInOrderAndCreatesNothing() {
    installGvisor();
    SandboxPlan plan = backend().plan(Specs.spec("p1"));
    assertThat(plan.backend()).isEqualTo("k8s");
    assertThat(plan.isolation()).isEqualTo(Isolation.GVISOR);
    assertThat(plan.runtime()).isEqualTo("runsc");
    assertThat(plan.manifests())
        .extracting(Manifest::kind)
        .containsExactly(
            "Namespace",
            "NetworkPolicy",
            "NetworkPolicy",
            "NetworkPolicy",
            "ServiceAccount",
            "Role",
            "RoleBinding",
            "ResourceQuota",
            "LimitRange",
            "ConfigMap",
            "Pod",
            "Service",
            "Job");
    assertThat(namespaceExists("p1")).isFalse();
    assertThat(
            client.network().v1().networkPolicies().inNamespace("agent-run-p1").list().getItems())
        .isEmpty();
  }

  @Test
  void refusesUnderRequireRuntimeClassAndCreatesNothing() {
    KubernetesBackend strict =
        backend(Specs.config().toBuilder().requireRuntimeClass(true).build());
    assertThatThrownBy(() -> strict.launch(Specs.spec("rq1"), listener))
        .isInstanceOf(UnableToLaunchSandboxException.class)
        .hasMessageContaining("launch of run rq1 on Kubernetes refused")
        .hasMessageContaining("RuntimeClass gvisor not found")
        .hasMessageContaining("runtimeclass-gvisor.yaml");
    assertThat(namespaceExists("rq1")).isFalse();
    assertThat(client.pods().inNamespace("agent-run-rq1").list().getItems()).isEmpty();
  }

  @Test
  void aRunThatRequiresGvisorIsRefusedEvenWhenTheBackendWouldFallBack() {
    assertThatThrownBy(() -> backend().launch(Specs.spec("rq2", List.of(), true), listener))
        .isInstanceOf(UnableToLaunchSandboxException.class)
        .hasMessageContaining("refused");
    assertThat(namespaceExists("rq2")).isFalse();
  }

  @Test
  void launchCreatesTheBundleInOrderAndPassesTheProxyIpToTheAgent() throws Exception {
    installGvisor();
    drainRequests();
    cluster.serveProxy("r1", "10.43.7.9");
    Sandbox sandbox = backend().launch(Specs.spec("r1"), listener);
    assertThat(sandbox.runtime()).isEqualTo("runsc");
    assertThat(createdInOrder())
        .containsExactly(
            "/api/v1/namespaces",
            "/apis/networking.k8s.io/v1/namespaces/agent-run-r1/networkpolicies",
            "/apis/networking.k8s.io/v1/namespaces/agent-run-r1/networkpolicies",
            "/apis/networking.k8s.io/v1/namespaces/agent-run-r1/networkpolicies",
            "/api/v1/namespaces/agent-run-r1/serviceaccounts",
            "/apis/rbac.authorization.k8s.io/v1/namespaces/agent-run-r1/roles",
            "/apis/rbac.authorization.k8s.io/v1/namespaces/agent-run-r1/rolebindings",
            "/api/v1/namespaces/agent-run-r1/resourcequotas",
            "/api/v1/namespaces/agent-run-r1/limitranges",
            "/api/v1/namespaces/agent-run-r1/configmaps",
            "/api/v1/namespaces/agent-run-r1/pods",
            "/api/v1/namespaces/agent-run-r1/services",
            "/apis/batch/v1/namespaces/agent-run-r1/jobs");
    Job job = client.batch().v1().jobs().inNamespace("agent-run-r1").withName("agent").get();
    var pod = job.getSpec().getTemplate().getSpec();
    assertThat(pod.getRuntimeClassName()).isEqualTo("gvisor");
    assertThat(pod.getContainers().get(0).getEnv())
        .anySatisfy(
            e ->
                assertThat(e.getName() + "=" + e.getValue())
                    .isEqualTo("HTTPS_PROXY=http://10.43.7.9:3128"));
    sandbox.teardown();
    assertThat(namespaceExists("r1")).isFalse();
  }

  /**
   * The playbook's labels (owner, agent, task reference, engagement code) from the run request, on
   * the namespace and on every object the launch sends to the API server, read from the requests
   * themselves, and on the pods the Job makes.
   */
  @Test
  void everyObjectALaunchCreatesCarriesTheRunRequestsLabels() throws Exception {
    installGvisor();
    drainRequests();
    cluster.serveProxy("lb1", "10.43.7.11");
    Map<String, String> runLabels =
        Map.of("owner", "alice", "task-ref", "JIRA-1042", "engagement", "ENG-7");
    RunSpec base = Specs.spec("lb1");
    RunSpec labelled =
        new RunSpec(
            base.runId(),
            base.agent(),
            base.image(),
            base.command(),
            base.env(),
            base.egress(),
            base.resources(),
            base.ttl(),
            base.expiresAt(),
            false,
            runLabels,
            List.of());
    Sandbox sandbox = backend().launch(labelled, listener);
    // Every object the launch sent (the mock server consumes the request bodies, so each is read
    // back from it): the paths say there are thirteen, the lists below find them all.
    assertThat(createdInOrder()).hasSize(13);
    String ns = "agent-run-lb1";
    List<io.fabric8.kubernetes.api.model.HasMetadata> created = new ArrayList<>();
    created.add(client.namespaces().withName(ns).get());
    created.addAll(client.network().v1().networkPolicies().inNamespace(ns).list().getItems());
    created.addAll(client.serviceAccounts().inNamespace(ns).list().getItems());
    created.addAll(client.rbac().roles().inNamespace(ns).list().getItems());
    created.addAll(client.rbac().roleBindings().inNamespace(ns).list().getItems());
    created.addAll(client.resourceQuotas().inNamespace(ns).list().getItems());
    created.addAll(client.limitRanges().inNamespace(ns).list().getItems());
    created.addAll(client.configMaps().inNamespace(ns).list().getItems());
    created.add(client.pods().inNamespace(ns).withName(BundleFactory.PROXY).get());
    created.addAll(client.services().inNamespace(ns).list().getItems());
    Job job = client.batch().v1().jobs().inNamespace(ns).withName(BundleFactory.JOB).get();
    created.add(job);
    assertThat(created).hasSize(13).doesNotContainNull();
    assertThat(created)
        .allSatisfy(
            o ->
                assertThat(o.getMetadata().getLabels())
                    .as(o.getKind() + " " + o.getMetadata().getName())
                    .containsAllEntriesOf(runLabels)
                    .containsEntry(dev.agentsandbox.backend.Labels.AGENT, "helper"));
    assertThat(job.getSpec().getTemplate().getMetadata().getLabels())
        .as("the agent pods the Job makes")
        .containsAllEntriesOf(runLabels);
    sandbox.teardown();
  }

  @Test
  void aFinishedRunReportsItsExitOutputAndDecisionsThenTearsDown() throws Exception {
    cluster.serveProxy("r2", "10.43.0.20");
    try (Sandbox sandbox = backend().launch(Specs.spec("r2"), listener)) {
      assertThat(sandbox.runtime()).isEqualTo(KubernetesBackend.NODE_DEFAULT_RUNTIME);
      cluster.agentPod("r2", 0);
      cluster.logs("r2", "hello\n", PROXY_LOG);
      cluster.finishJob("r2", "Complete", null);
      Completion completion = sandbox.await(Instant.now().plusSeconds(30));
      assertThat(completion.end()).isEqualTo(End.EXIT);
      assertThat(completion.exitStatus()).hasValue(0);
      assertThat(listener.output()).isEqualTo("hello\n");
      assertThat(listener.decisions)
          .containsExactly(
              "{\"run_id\":\"r1\",\"host\":\"api.github.com\",\"decision\":\"allow\"}",
              "{\"run_id\":\"r1\",\"host\":\"evil.example\",\"decision\":\"deny\"}");
    }
    assertThat(namespaceExists("r2")).isFalse();
  }

  @Test
  void aFailedAgentReportsItsExitStatus() throws Exception {
    cluster.serveProxy("r3", "10.43.0.21");
    try (Sandbox sandbox = backend().launch(Specs.spec("r3"), listener)) {
      cluster.agentPod("r3", 3);
      cluster.logs("r3", "boom\n", "");
      cluster.finishJob("r3", "Failed", "BackoffLimitExceeded");
      Completion completion = sandbox.await(Instant.now().plusSeconds(30));
      assertThat(completion.end()).isEqualTo(End.EXIT);
      assertThat(completion.exitStatus()).hasValue(3);
    }
    assertThat(namespaceExists("r3")).isFalse();
  }

  @Test
  void kubernetesOwnDeadlineReadsAsDeadline() throws Exception {
    cluster.serveProxy("r4", "10.43.0.22");
    try (Sandbox sandbox = backend().launch(Specs.spec("r4"), listener)) {
      cluster.agentPod("r4", 137);
      cluster.logs("r4", "working\n", "");
      cluster.finishJob("r4", "Failed", "DeadlineExceeded");
      Completion completion = sandbox.await(Instant.now().plusSeconds(30));
      assertThat(completion.end()).isEqualTo(End.DEADLINE);
      assertThat(completion.detail()).contains("activeDeadlineSeconds");
    }
    assertThat(namespaceExists("r4")).isFalse();
  }

  @Test
  void theBackendsDeadlineCollectsWhatRanThenDeletesTheJob() throws Exception {
    cluster.serveProxy("r5", "10.43.0.23");
    try (Sandbox sandbox = backend().launch(Specs.spec("r5"), listener)) {
      cluster.agentPod("r5", null);
      cluster.logs("r5", "still going\n", PROXY_LOG);
      Completion completion = sandbox.await(Instant.now().plusMillis(200));
      assertThat(completion.end()).isEqualTo(End.DEADLINE);
      assertThat(completion.exitStatus()).isEmpty();
      assertThat(listener.output()).isEqualTo("still going\n");
      assertThat(listener.decisions).hasSize(2);
      assertThat(client.batch().v1().jobs().inNamespace("agent-run-r5").withName("agent").get())
          .isNull();
    }
    assertThat(namespaceExists("r5")).isFalse();
  }

  @Test
  void killWhileAwaitingEndsTheRunAsKilled() throws Exception {
    cluster.serveProxy("r6", "10.43.0.24");
    try (Sandbox sandbox = backend().launch(Specs.spec("r6"), listener)) {
      cluster.agentPod("r6", null);
      cluster.logs("r6", "looping\n", "");
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
      Completion completion = waiting.get(30, TimeUnit.SECONDS);
      assertThat(completion.end()).isEqualTo(End.KILLED);
      assertThat(listener.output()).isEqualTo("looping\n");
      assertThat(client.batch().v1().jobs().inNamespace("agent-run-r6").withName("agent").get())
          .isNull();
    }
    assertThat(namespaceExists("r6")).isFalse();
  }

  @Test
  void killWithoutAwaitDeletesTheJobAtOnceAndTeardownIsIdempotent() throws Exception {
    cluster.serveProxy("r7", "10.43.0.25");
    Sandbox sandbox = backend().launch(Specs.spec("r7"), listener);
    sandbox.kill();
    assertThat(client.batch().v1().jobs().inNamespace("agent-run-r7").withName("agent").get())
        .isNull();
    sandbox.teardown();
    sandbox.teardown();
    assertThat(namespaceExists("r7")).isFalse();
  }

  @Test
  void aProxyThatGetsNoClusterIpFailsTheLaunchAndDeletesTheNamespace() {
    KubernetesBackend impatient =
        new KubernetesBackend(
            client,
            Specs.config().toBuilder()
                .proxyReadyTimeout(Duration.ofMillis(300))
                .pollInterval(Duration.ofMillis(20))
                .build(),
            Clock.systemUTC());
    assertThatThrownBy(() -> impatient.launch(Specs.spec("r8"), listener))
        .isInstanceOf(UnableToLaunchSandboxException.class)
        .hasMessageContaining("starting the egress proxy of run r8 in namespace agent-run-r8")
        .hasMessageContaining("ClusterIP")
        .hasMessageContaining("kubectl -n agent-run-r8 describe pod egress-proxy");
    assertThat(namespaceExists("r8")).isFalse();
  }

  @Test
  void aProxyThatNeverBecomesReadyFailsTheLaunchAndDeletesTheNamespace() {
    cluster.serveProxy("r9", "10.43.0.26", "Running", false);
    // Long enough for the test's controller to give the Service its ClusterIP even on a loaded
    // machine (0.5 s once was not), so that what runs out is the wait for readiness.
    KubernetesBackend impatient =
        new KubernetesBackend(
            client,
            Specs.config().toBuilder()
                .proxyReadyTimeout(Duration.ofSeconds(3))
                .pollInterval(Duration.ofMillis(20))
                .build(),
            Clock.systemUTC());
    assertThatThrownBy(() -> impatient.launch(Specs.spec("r9"), listener))
        .isInstanceOf(UnableToLaunchSandboxException.class)
        .hasMessageContaining("to become Ready");
    assertThat(namespaceExists("r9")).isFalse();
    assertThat(client.batch().v1().jobs().inNamespace("agent-run-r9").list().getItems()).isEmpty();
  }

  @Test
  void aProxyThatDiesFailsTheLaunchAndDeletesTheNamespace() {
    cluster.serveProxy("r10", "10.43.0.27", "Failed", false);
    assertThatThrownBy(() -> backend().launch(Specs.spec("r10"), listener))
        .isInstanceOf(UnableToLaunchSandboxException.class)
        .hasMessageContaining("proxy pod ended with phase Failed");
    assertThat(namespaceExists("r10")).isFalse();
  }

  @Test
  void aRefusedObjectMidwayFailsTheLaunchAndDeletesTheNamespace() {
    // The API refuses the ConfigMap (here: it already exists), after the fence was created.
    client
        .configMaps()
        .inNamespace("agent-run-r11")
        .resource(
            new ConfigMapBuilder()
                .withNewMetadata()
                .withName("egress-policy")
                .withNamespace("agent-run-r11")
                .endMetadata()
                .build())
        .create();
    assertThatThrownBy(() -> backend().launch(Specs.spec("r11"), listener))
        .isInstanceOf(UnableToLaunchSandboxException.class)
        .hasMessageContaining("creating ConfigMap egress-policy in namespace agent-run-r11")
        .hasMessageContaining("HTTP 409");
    assertThat(namespaceExists("r11")).isFalse();
  }

  @Test
  void aNamespaceThatAlreadyExistsIsNotDeletedByTheFailedLaunch() {
    client
        .namespaces()
        .resource(
            new NamespaceBuilder()
                .withNewMetadata()
                .withName("agent-run-r12")
                .endMetadata()
                .build())
        .create();
    assertThatThrownBy(() -> backend().launch(Specs.spec("r12"), listener))
        .isInstanceOf(UnableToLaunchSandboxException.class)
        .hasMessageContaining("creating Namespace agent-run-r12");
    assertThat(namespaceExists("r12")).isTrue();
  }

  private static void drainRequests() throws InterruptedException {
    for (int i = 0; i < 10_000 && server.takeRequest(1, TimeUnit.MILLISECONDS) != null; i++) {
      // discard what earlier tests sent
    }
  }

  private static List<String> createdInOrder() throws InterruptedException {
    List<String> posts = new ArrayList<>();
    RecordedRequest request;
    for (int i = 0;
        i < 10_000 && (request = server.takeRequest(1, TimeUnit.MILLISECONDS)) != null;
        i++) {
      if ("POST".equals(request.getMethod())) {
        posts.add(request.getPath());
      }
    }
    return posts;
  }

  private static final class TestClock extends Clock {
    private final java.util.concurrent.atomic.AtomicReference<Instant> now;

    TestClock(Instant start) {
      this.now = new java.util.concurrent.atomic.AtomicReference<>(start);
    }

    void advance(Duration by) {
      now.updateAndGet(t -> t.plus(by));
    }

    @Override
    public Instant instant() {
      return now.get();
    }

    @Override
    public java.time.ZoneId getZone() {
      return java.time.ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(java.time.ZoneId zone) {
      return this;
    }
  }

  private static final class Recorder implements SandboxListener {
    private final List<byte[]> chunks = new CopyOnWriteArrayList<>();
    final List<String> decisions = new CopyOnWriteArrayList<>();

    @Override
    public void onOutput(byte[] chunk) {
      chunks.add(chunk.clone());
    }

    @Override
    public void onEgressDecision(String jsonLine) {
      decisions.add(jsonLine);
    }

    String output() {
      StringBuilder all = new StringBuilder();
      chunks.forEach(c -> all.append(new String(c, StandardCharsets.UTF_8)));
      return all.toString();
    }
  }
}
