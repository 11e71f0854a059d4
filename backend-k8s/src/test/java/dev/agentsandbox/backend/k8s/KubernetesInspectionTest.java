package dev.agentsandbox.backend.k8s;

import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.backend.RunCredential;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.backend.RunTrust;
import dev.agentsandbox.backend.Sandbox;
import dev.agentsandbox.backend.SandboxListener;
import dev.agentsandbox.policy.config.Injection;
import dev.agentsandbox.policy.config.InspectedHost;
import dev.agentsandbox.policy.config.ProxyPolicy;
import dev.agentsandbox.policy.config.RunEgress;
import dev.agentsandbox.policy.http.RequestRule;
import dev.agentsandbox.policy.http.RequestRules;
import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.Secret;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.batch.v1.Job;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import io.fabric8.mockwebserver.http.RecordedRequest;
import java.security.KeyStore;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A run that inspects a host, on Kubernetes (the bundle's contract, against fabric8's mock API
 * server): the CA certificate reaches the agent's pod, the injected credential only the proxy's —
 * each pod references exactly its own Secret, and the token is in no request but the one that
 * creates the proxy's Secret.
 */
@EnableKubernetesMockClient(crud = true)
class KubernetesInspectionTest {
  static KubernetesClient client;
  static KubernetesMockServer server;

  private static final String GITHUB_TOKEN = "ghs_k8s0inspected0token0f00d";
  private static final KubernetesSerialization JSON = new KubernetesSerialization();
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
  }

  @AfterEach
  void tearDown() {
    cluster.close();
  }

  /** {@link Specs#withCredentials} whose agent may GET one repository of api.github.com. */
  static RunSpec inspecting(String runId) {
    RunSpec base = Specs.withCredentials(runId);
    RunEgress egress =
        new RunEgress(
            base.egress().allow(),
            base.egress().instanceAllow(),
            base.egress().internal(),
            base.egress().hosts(),
            List.of(
                new InspectedHost(
                    "api.github.com",
                    Optional.of(new RequestRules(List.of(RequestRule.parse("GET /repos/acme/**")))),
                    Optional.of(Injection.of("github", "Authorization")))),
            Optional.empty());
    List<RunCredential> credentials = new ArrayList<>(base.credentials());
    credentials.add(
        new RunCredential("github", GITHUB_TOKEN, Optional.of("GH_TOKEN"), Specs.EXPIRES));
    return new RunSpec(
            base.runId(),
            base.agent(),
            base.image(),
            base.command(),
            base.env(),
            egress,
            base.resources(),
            base.ttl(),
            base.expiresAt(),
            false,
            base.runLabels(),
            List.of())
        .withCredentials(credentials);
  }

  private static String somePem() throws Exception {
    javax.net.ssl.TrustManagerFactory factory =
        javax.net.ssl.TrustManagerFactory.getInstance(
            javax.net.ssl.TrustManagerFactory.getDefaultAlgorithm());
    factory.init((KeyStore) null);
    var authority =
        ((javax.net.ssl.X509TrustManager) factory.getTrustManagers()[0]).getAcceptedIssuers()[0];
    return "-----BEGIN CERTIFICATE-----\n"
        + Base64.getMimeEncoder(64, new byte[] {'\n'}).encodeToString(authority.getEncoded())
        + "\n-----END CERTIFICATE-----\n";
  }

  /** The Secrets a pod can read: its volumes' and its containers' variables'. */
  private static Set<String> secretsOf(PodSpec pod) {
    Set<String> names = new TreeSet<>();
    for (Volume volume : pod.getVolumes()) {
      if (volume.getSecret() != null) {
        names.add(volume.getSecret().getSecretName());
      }
    }
    List<Container> containers = new ArrayList<>(pod.getContainers());
    containers.addAll(pod.getInitContainers());
    for (Container container : containers) {
      for (EnvVar env : container.getEnv() == null ? List.<EnvVar>of() : container.getEnv()) {
        if (env.getValueFrom() != null && env.getValueFrom().getSecretKeyRef() != null) {
          names.add(env.getValueFrom().getSecretKeyRef().getName());
        }
      }
    }
    return names;
  }

  @Test
  void inTheBundleEachPodReadsOnlyItsOwnSecretAndThePlanHoldsNoValue() {
    RunSpec spec = inspecting("i1");
    KubernetesBundle bundle =
        new BundleFactory(Specs.config()).build(spec, Optional.empty(), Optional.of("10.43.0.9"));
    Pod proxy = bundle.get(Pod.class, BundleFactory.PROXY);
    PodSpec agent = bundle.get(Job.class, BundleFactory.JOB).getSpec().getTemplate().getSpec();
    assertThat(secretsOf(proxy.getSpec())).containsExactly(InspectionPods.PROXY_CREDENTIALS_SECRET);
    assertThat(secretsOf(agent)).containsExactly(BundleFactory.CREDENTIALS_SECRET);
    assertThat(bundle.get(Secret.class, InspectionPods.PROXY_CREDENTIALS_SECRET).getStringData())
        .containsExactly(Map.entry("github", BundleFactory.REDACTED));
    assertThat(JSON.asJson(bundle.objects())).doesNotContain(GITHUB_TOKEN);

    // The proxy's Secret comes before the proxy's pod, which reads it at start.
    List<String> order =
        bundle.objects().stream().map(o -> o.getKind() + "/" + o.getMetadata().getName()).toList();
    assertThat(order.indexOf("Secret/" + InspectionPods.PROXY_CREDENTIALS_SECRET))
        .isLessThan(order.indexOf("Pod/" + BundleFactory.PROXY));

    // The agent trusts the run CA: the init container joins it to the image's bundle.
    Container trust =
        agent.getInitContainers().stream()
            .filter(c -> c.getName().equals(InspectionPods.TRUST_INIT))
            .findFirst()
            .orElseThrow();
    assertThat(trust.getImage()).isEqualTo(spec.image());
    assertThat(trust.getVolumeMounts())
        .extracting(m -> m.getName())
        .containsExactlyInAnyOrder(InspectionPods.TRUST_SOURCE_VOLUME, InspectionPods.TRUST_VOLUME);
    Container workload = agent.getContainers().get(0);
    assertThat(workload.getEnv())
        .extracting(EnvVar::getName, EnvVar::getValue)
        .contains(
            org.assertj.core.groups.Tuple.tuple("SSL_CERT_FILE", RunTrust.BUNDLE),
            org.assertj.core.groups.Tuple.tuple("NODE_EXTRA_CA_CERTS", RunTrust.RUN_CA));
    assertThat(workload.getVolumeMounts())
        .filteredOn(m -> m.getName().equals(InspectionPods.TRUST_VOLUME))
        .singleElement()
        .satisfies(m -> assertThat(m.getReadOnly()).isTrue());
    // The proxy's policy names the folder its Secret is mounted at, and no value.
    String policy =
        bundle
            .get(ConfigMap.class, BundleFactory.POLICY_CONFIG_MAP)
            .getData()
            .get(BundleFactory.POLICY_FILE);
    assertThat(policy)
        .contains(ProxyPolicy.PROXY_CREDENTIALS_DIR)
        .contains("\"credential\":\"github\"");
    assertThat(proxy.getSpec().getContainers().get(0).getVolumeMounts())
        .anySatisfy(
            m -> {
              assertThat(m.getMountPath()).isEqualTo(ProxyPolicy.PROXY_CREDENTIALS_DIR);
              assertThat(m.getReadOnly()).isTrue();
            });
  }

  @Test
  void aLaunchWritesTheTokenToTheProxysSecretAloneAndTheCaFromTheProxysLog() throws Exception {
    for (int i = 0; i < 10_000 && server.takeRequest(1, TimeUnit.MILLISECONDS) != null; i++) {
      // discard earlier requests
    }
    String pem = somePem();
    cluster.serveProxy("i2", "10.43.8.9");
    cluster.logs(
        "i2",
        "",
        "{\"decision\":\"allow\"}\n"
            + ProxyPolicy.caLine(pem)
            + "\nagent-sandbox proxy ready on 0.0.0.0:3128\n");
    KubernetesBackend backend =
        new KubernetesBackend(
            client,
            Specs.config().toBuilder()
                .proxyReadyTimeout(Duration.ofSeconds(15))
                .pollInterval(Duration.ofMillis(20))
                .build(),
            Clock.systemUTC());
    try (Sandbox sandbox = backend.launch(inspecting("i2"), listener)) {
      String ns = "agent-run-i2";
      Secret proxySecret =
          client.secrets().inNamespace(ns).withName(InspectionPods.PROXY_CREDENTIALS_SECRET).get();
      assertThat(proxySecret.getStringData()).containsExactly(Map.entry("github", GITHUB_TOKEN));
      Secret agentSecret =
          client.secrets().inNamespace(ns).withName(BundleFactory.CREDENTIALS_SECRET).get();
      assertThat(agentSecret.getStringData())
          .containsEntry("github", Injection.PLACEHOLDER)
          .containsEntry("run-token", Specs.TOKEN);
      ConfigMap trust =
          client.configMaps().inNamespace(ns).withName(InspectionPods.TRUST_CONFIG_MAP).get();
      assertThat(trust.getData().get("run-ca.pem")).isEqualTo(pem);
      assertThat(trust.getBinaryData()).containsKey("ca-bundle.p12");
      // Of everything the launch stored, only the proxy's Secret holds the token.
      List<HasMetadata> stored = new ArrayList<>();
      stored.addAll(client.secrets().inNamespace(ns).list().getItems());
      stored.addAll(client.configMaps().inNamespace(ns).list().getItems());
      stored.addAll(client.pods().inNamespace(ns).list().getItems());
      stored.addAll(client.services().inNamespace(ns).list().getItems());
      stored.addAll(client.batch().v1().jobs().inNamespace(ns).list().getItems());
      stored.addAll(client.network().v1().networkPolicies().inNamespace(ns).list().getItems());
      String encoded =
          Base64.getEncoder()
              .encodeToString(GITHUB_TOKEN.getBytes(java.nio.charset.StandardCharsets.UTF_8));
      assertThat(
              stored.stream()
                  .filter(
                      o ->
                          JSON.asJson(o).contains(GITHUB_TOKEN) || JSON.asJson(o).contains(encoded))
                  .map(o -> o.getKind() + "/" + o.getMetadata().getName())
                  .toList())
          .as("the objects holding the token")
          .containsExactly("Secret/" + InspectionPods.PROXY_CREDENTIALS_SECRET);
    }
    List<String> posts = new ArrayList<>();
    RecordedRequest request;
    for (int i = 0;
        i < 10_000 && (request = server.takeRequest(1, TimeUnit.MILLISECONDS)) != null;
        i++) {
      if ("POST".equals(request.getMethod())) {
        posts.add(request.getPath());
      }
    }
    // The proxy's Secret before its pod; the trust ConfigMap after the proxy, before the Job.
    assertThat(posts.indexOf("/api/v1/namespaces/agent-run-i2/secrets"))
        .isLessThan(posts.indexOf("/api/v1/namespaces/agent-run-i2/pods"));
    assertThat(posts.lastIndexOf("/api/v1/namespaces/agent-run-i2/configmaps"))
        .isLessThan(posts.indexOf("/apis/batch/v1/namespaces/agent-run-i2/jobs"));
    assertThat(posts.lastIndexOf("/api/v1/namespaces/agent-run-i2/configmaps"))
        .isGreaterThan(posts.indexOf("/api/v1/namespaces/agent-run-i2/pods"));
  }
}
