package dev.agentsandbox.backend.k8s;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.agentsandbox.backend.Labels;
import dev.agentsandbox.backend.Manifest;
import dev.agentsandbox.backend.RunContract;
import dev.agentsandbox.backend.Sandbox;
import dev.agentsandbox.backend.SandboxListener;
import dev.agentsandbox.backend.SandboxPlan;
import dev.agentsandbox.backend.UnableToLaunchSandboxException;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.Secret;
import io.fabric8.kubernetes.api.model.StatusBuilder;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.fabric8.kubernetes.api.model.batch.v1.Job;
import io.fabric8.kubernetes.api.model.node.v1.RuntimeClassBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.dsl.NonDeletingOperation;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import io.fabric8.mockwebserver.http.RecordedRequest;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A run's credentials on Kubernetes, against fabric8's mock API server with {@link FakeCluster} as
 * the controllers: one immutable Secret in the run's namespace, read by the agent's pod alone, its
 * values in no plan, no pod spec and no error.
 */
@EnableKubernetesMockClient(crud = true)
class KubernetesCredentialsTest {
  private static final KubernetesSerialization JSON = new KubernetesSerialization();

  static KubernetesClient client;
  static KubernetesMockServer server;

  private FakeCluster cluster;
  private final SandboxListener listener =
      new SandboxListener() {
        @Override
        public void onOutput(byte[] chunk) {}

        @Override
        public void onEgressDecision(String jsonLine) {}
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

  private static KubernetesBackend backend() {
    return new KubernetesBackend(
        client,
        Specs.config().toBuilder()
            .proxyReadyTimeout(Duration.ofSeconds(15))
            .pollInterval(Duration.ofMillis(20))
            .build(),
        Clock.systemUTC());
  }

  /** Each credential value as sent and as the API server stores it (base64 in data). */
  private static List<String> valueForms() {
    List<String> forms = new ArrayList<>();
    for (String value : List.of(Specs.TOKEN, Specs.JWT)) {
      forms.add(value);
      forms.add(Base64.getEncoder().encodeToString(value.getBytes(StandardCharsets.UTF_8)));
    }
    return forms;
  }

  @Test
  void theBackendSaysItDeliversCredentials() {
    // The run service refuses a run with credentials on a backend that does not.
    assertThat(backend().deliversCredentials()).isTrue();
  }

  @Test
  void credentialsBecomeAnImmutableLabelledSecretWrittenAfterTheProxyAndBeforeTheJob()
      throws Exception {
    drainRequests();
    cluster.serveProxy("k1", "10.43.8.1");
    Sandbox sandbox = backend().launch(Specs.withCredentials("k1"), listener);
    List<String> posts = createdInOrder();
    assertThat(posts.subList(posts.size() - 3, posts.size()))
        .containsExactly(
            "/api/v1/namespaces/agent-run-k1/services",
            "/api/v1/namespaces/agent-run-k1/secrets",
            "/apis/batch/v1/namespaces/agent-run-k1/jobs");

    Secret secret =
        client
            .secrets()
            .inNamespace("agent-run-k1")
            .withName(BundleFactory.CREDENTIALS_SECRET)
            .get();
    assertThat(secret.getType()).isEqualTo("Opaque");
    assertThat(secret.getImmutable()).isTrue();
    assertThat(secret.getStringData())
        .containsExactlyInAnyOrderEntriesOf(Map.of("run-token", Specs.TOKEN, "llm.jwt", Specs.JWT));
    assertThat(secret.getMetadata().getLabels())
        .containsEntry("owner", "alice")
        .containsEntry("task-ref", "JIRA-1042")
        .containsEntry(Labels.MANAGED_BY, Labels.MANAGER)
        .containsEntry(Labels.RUN_ID, "k1");

    sandbox.teardown();
    // The Secret has no delete of its own: the namespace controller removes it with the
    // namespace (the mock server runs no such controller, so the namespace's deletion is what
    // can be checked here).
    assertThat(client.namespaces().withName("agent-run-k1").get()).isNull();
  }

  @Test
  void onlyTheAgentsPodReadsTheSecretAndItsWorkloadGetsA0400FileOfItsOwnOnATmpfs()
      throws Exception {
    cluster.serveProxy("k2", "10.43.8.2");
    try (Sandbox sandbox = backend().launch(Specs.withCredentials("k2"), listener)) {
      Job job = client.batch().v1().jobs().inNamespace("agent-run-k2").withName("agent").get();
      PodSpec agentPod = job.getSpec().getTemplate().getSpec();

      // The Secret's volume, and the tmpfs the workload reads.
      assertThat(volume(agentPod, SandboxPods.CREDENTIALS_SECRET_VOLUME).getSecret())
          .satisfies(
              s -> {
                assertThat(s.getSecretName()).isEqualTo(BundleFactory.CREDENTIALS_SECRET);
                assertThat(s.getDefaultMode()).isEqualTo(0440);
                assertThat(s.getOptional()).isFalse();
              });
      assertThat(volume(agentPod, SandboxPods.CREDENTIALS_VOLUME).getEmptyDir())
          .satisfies(e -> assertThat(e.getMedium()).isEqualTo("Memory"));

      // The pod's user is the files' owner: the copy runs as it, the workload runs as it.
      assertThat(agentPod.getSecurityContext().getRunAsUser()).isEqualTo(SandboxPods.NON_ROOT_UID);
      assertThat(agentPod.getSecurityContext().getRunAsGroup()).isEqualTo(SandboxPods.NON_ROOT_UID);
      assertThat(agentPod.getSecurityContext().getFsGroup()).isEqualTo(SandboxPods.NON_ROOT_UID);

      // The runtime check first, then the copy: nothing of the run's reaches a pod that failed it.
      // The collect sidecar last, and it never mounts the credentials (SandboxPodsOutputTest).
      assertThat(agentPod.getInitContainers())
          .extracting(Container::getName)
          .containsExactly(
              SandboxPods.RUNTIME_CHECK, SandboxPods.CREDENTIALS_COPY, SandboxPods.COLLECT);
      Container copy = agentPod.getInitContainers().get(1);
      assertThat(copy.getCommand())
          .containsExactly(
              "/bin/sh", "-c", SandboxPods.CREDENTIALS_COPY_SCRIPT, "sh", "llm.jwt", "run-token");
      assertThat(copy.getVolumeMounts())
          .extracting(m -> m.getName() + " " + m.getMountPath() + " ro=" + m.getReadOnly())
          .containsExactlyInAnyOrder(
              "credentials-secret /run/agent-sandbox/secret ro=true",
              "credentials /run/agent-sandbox/credentials ro=false");
      assertThat(copy.getSecurityContext().getReadOnlyRootFilesystem()).isTrue();
      assertThat(copy.getSecurityContext().getAllowPrivilegeEscalation()).isFalse();

      // The workload: the tmpfs read-only, never the Secret's volume; the JWT as LLM_TOKEN,
      // which the kubelet fills from the Secret, so the value is in no pod spec.
      Container agent = agentPod.getContainers().get(0);
      assertThat(agent.getVolumeMounts())
          .extracting(VolumeMount::getName)
          .doesNotContain(SandboxPods.CREDENTIALS_SECRET_VOLUME);
      assertThat(agent.getVolumeMounts())
          .filteredOn(m -> m.getName().equals(SandboxPods.CREDENTIALS_VOLUME))
          .singleElement()
          .satisfies(
              m -> {
                assertThat(m.getMountPath()).isEqualTo(RunContract.CREDENTIALS_DIR);
                assertThat(m.getReadOnly()).isTrue();
              });
      assertThat(env(agent, "LLM_TOKEN").getValue()).isNull();
      assertThat(env(agent, "LLM_TOKEN").getValueFrom().getSecretKeyRef())
          .satisfies(
              ref -> {
                assertThat(ref.getName()).isEqualTo(BundleFactory.CREDENTIALS_SECRET);
                assertThat(ref.getKey()).isEqualTo("llm.jwt");
              });
      assertThat(env(agent, RunContract.CREDENTIALS_ENV).getValue())
          .isEqualTo(RunContract.CREDENTIALS_DIR);
      assertThat(env(agent, RunContract.RUN_ID_ENV).getValue()).isEqualTo("k2");

      // The proxy's pod has neither the Secret nor the tmpfs, nor a variable from either.
      Pod proxy = client.pods().inNamespace("agent-run-k2").withName(BundleFactory.PROXY).get();
      String proxyJson = JSON.asJson(proxy);
      assertThat(proxy.getSpec().getVolumes()).allSatisfy(v -> assertThat(v.getSecret()).isNull());
      assertThat(proxyJson)
          .doesNotContain(BundleFactory.CREDENTIALS_SECRET, "secretKeyRef", "credentials");

      // No value in any object but the Secret.
      String jobJson = JSON.asJson(job);
      assertThat(valueForms()).allSatisfy(v -> assertThat(jobJson + proxyJson).doesNotContain(v));
    }
    assertThat(client.namespaces().withName("agent-run-k2").get()).isNull();
  }

  @Test
  void aCredentialVariableCannotReplaceTheProxyVariables() {
    var base = Specs.withCredentials("k3");
    var hijack =
        base.withCredentials(
            List.of(
                new dev.agentsandbox.backend.RunCredential(
                    "token", Specs.TOKEN, java.util.Optional.of("HTTPS_PROXY"), base.expiresAt())));
    Container agent =
        new BundleFactory(Specs.config())
            .build(hijack, java.util.Optional.empty(), java.util.Optional.of("10.43.8.3"))
            .get(Job.class, BundleFactory.JOB)
            .getSpec()
            .getTemplate()
            .getSpec()
            .getContainers()
            .get(0);
    assertThat(agent.getEnv()).filteredOn(e -> e.getName().equals("HTTPS_PROXY")).hasSize(1);
    assertThat(env(agent, "HTTPS_PROXY").getValue()).isEqualTo("http://10.43.8.3:3128");
  }

  @Test
  void aRunWithoutCredentialsHasNoSecretAndNoCredentialsVolume() {
    KubernetesBundle bundle =
        new BundleFactory(Specs.config())
            .build(Specs.spec("k4"), java.util.Optional.empty(), java.util.Optional.empty());
    assertThat(bundle.objects()).noneMatch(o -> o instanceof Secret);
    PodSpec pod = bundle.get(Job.class, BundleFactory.JOB).getSpec().getTemplate().getSpec();
    assertThat(pod.getVolumes())
        .extracting(Volume::getName)
        .doesNotContain(SandboxPods.CREDENTIALS_VOLUME, SandboxPods.CREDENTIALS_SECRET_VOLUME);
    assertThat(pod.getContainers().get(0).getEnv())
        .extracting(EnvVar::getName)
        .doesNotContain(RunContract.CREDENTIALS_ENV);
  }

  @Test
  void planShowsTheSecretsNameAndKeysButNoValue() {
    SandboxPlan plan = backend().plan(Specs.withCredentials("k5"));
    List<Manifest> manifests = plan.manifests();
    assertThat(manifests.get(manifests.size() - 2))
        .satisfies(
            secret -> {
              assertThat(secret.kind()).isEqualTo("Secret");
              assertThat(secret.name()).isEqualTo(BundleFactory.CREDENTIALS_SECRET);
              assertThat(secret.body()).isInstanceOf(Map.class);
              @SuppressWarnings("unchecked")
              Map<String, Object> body = (Map<String, Object>) secret.body();
              assertThat(body)
                  .containsEntry("type", "Opaque")
                  .containsEntry("immutable", true)
                  .containsEntry(
                      "stringData",
                      Map.of(
                          "llm.jwt", BundleFactory.REDACTED, "run-token", BundleFactory.REDACTED));
            });
    String shown = String.valueOf(manifests);
    String yaml = backend().bundle(Specs.withCredentials("k5")).toYaml();
    assertThat(valueForms())
        .allSatisfy(
            v -> {
              assertThat(shown).doesNotContain(v);
              assertThat(yaml).doesNotContain(v);
            });
    assertThat(yaml).contains("run-token: \"<redacted>\"", "name: \"run-credentials\"");
    assertThat(client.namespaces().withName("agent-run-k5").get()).isNull();
  }

  @Test
  void aRefusedSecretFailsTheLaunchWithoutAnyValueInTheErrorAndDeletesTheNamespace() {
    // A hostile or careless admission webhook that quotes what it refused, raw and base64.
    String quoted =
        "admission webhook \"secrets.example\" denied the request: run-token="
            + Specs.TOKEN
            + " data.llm.jwt="
            + Base64.getEncoder().encodeToString(Specs.JWT.getBytes(StandardCharsets.UTF_8))
            + " is not allowed";
    server
        .expect()
        .post()
        .withPath("/api/v1/namespaces/agent-run-k6/secrets")
        .andReturn(
            403,
            new StatusBuilder()
                .withStatus("Failure")
                .withCode(403)
                .withReason("Forbidden")
                .withMessage(quoted)
                .build())
        .once();
    cluster.serveProxy("k6", "10.43.8.6");
    assertThatThrownBy(() -> backend().launch(Specs.withCredentials("k6"), listener))
        .isInstanceOf(UnableToLaunchSandboxException.class)
        .hasMessageContaining("creating Secret run-credentials in namespace agent-run-k6")
        .hasMessageContaining("HTTP 403")
        .hasMessageContaining("run-token=<redacted>")
        .satisfies(
            e -> {
              for (Throwable t = e; t != null; t = t.getCause()) {
                String text = t + " " + List.of(t.getSuppressed());
                assertThat(valueForms()).allSatisfy(v -> assertThat(text).doesNotContain(v));
              }
            });
    assertThat(client.batch().v1().jobs().inNamespace("agent-run-k6").list().getItems()).isEmpty();
    assertThat(client.namespaces().withName("agent-run-k6").get()).isNull();
  }

  private static Volume volume(PodSpec pod, String name) {
    return pod.getVolumes().stream()
        .filter(v -> v.getName().equals(name))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no volume " + name + " in " + pod.getVolumes()));
  }

  private static EnvVar env(Container container, String name) {
    return container.getEnv().stream()
        .filter(e -> e.getName().equals(name))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no variable " + name));
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
}
