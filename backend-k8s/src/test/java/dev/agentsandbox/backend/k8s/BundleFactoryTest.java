package dev.agentsandbox.backend.k8s;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.fasterxml.jackson.dataformat.yaml.YAMLParser;
import dev.agentsandbox.backend.Labels;
import dev.agentsandbox.backend.Manifest;
import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.LimitRange;
import io.fabric8.kubernetes.api.model.Namespace;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.ResourceQuota;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.ServiceAccount;
import io.fabric8.kubernetes.api.model.batch.v1.Job;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy;
import io.fabric8.kubernetes.api.model.rbac.Role;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class BundleFactoryTest {
  private static final BundleFactory FACTORY = new BundleFactory(Specs.config());
  private static final KubernetesBundle BUNDLE =
      FACTORY.build(Specs.spec("r42"), Optional.of("gvisor"), Optional.of("10.43.7.9"));

  @Test
  void createsEveryObjectInTheIssuesOrder() {
    assertThat(BUNDLE.objects())
        .extracting(o -> o.getKind() + "/" + o.getMetadata().getName())
        .containsExactly(
            "Namespace/agent-run-r42",
            "NetworkPolicy/default-deny",
            "NetworkPolicy/agent-egress-to-proxy",
            "NetworkPolicy/proxy-fence",
            "ServiceAccount/agent-run",
            "Role/agent-run",
            "RoleBinding/agent-run",
            "ResourceQuota/agent-run",
            "LimitRange/agent-run",
            "ConfigMap/egress-policy",
            "Pod/egress-proxy",
            "Service/egress-proxy",
            "Job/agent");
    assertThat(BUNDLE.objects().stream().skip(1))
        .allSatisfy(o -> assertThat(o.getMetadata().getNamespace()).isEqualTo("agent-run-r42"));
  }

  @Test
  void labelsEveryObjectWithTheRunSoTheReaperCanFindIt() {
    assertThat(BUNDLE.objects())
        .allSatisfy(
            o ->
                assertThat(o.getMetadata().getLabels())
                    .containsEntry(Labels.RUN_ID, "r42")
                    .containsEntry(Labels.AGENT, "helper")
                    .containsEntry(Labels.MANAGED_BY, Labels.MANAGER)
                    .containsEntry(
                        Labels.EXPIRES_AT, Long.toString(Specs.EXPIRES.getEpochSecond())));
  }

  @Test
  void namespaceEnforcesRestrictedPodSecurityAtAPinnedVersion() {
    Map<String, String> labels =
        BUNDLE.get(Namespace.class, "agent-run-r42").getMetadata().getLabels();
    for (String mode : List.of("enforce", "warn", "audit")) {
      assertThat(labels)
          .containsEntry("pod-security.kubernetes.io/" + mode, "restricted")
          .containsEntry("pod-security.kubernetes.io/" + mode + "-version", "v1.31");
    }
  }

  @Test
  void defaultDenySelectsEveryPodInBothDirections() {
    NetworkPolicy deny = BUNDLE.get(NetworkPolicy.class, NetworkFence.DEFAULT_DENY);
    assertThat(deny.getSpec().getPodSelector().getMatchLabels()).isNullOrEmpty();
    assertThat(deny.getSpec().getPodSelector().getMatchExpressions()).isNullOrEmpty();
    assertThat(deny.getSpec().getPolicyTypes()).containsExactlyInAnyOrder("Ingress", "Egress");
    assertThat(deny.getSpec().getIngress()).isNullOrEmpty();
    assertThat(deny.getSpec().getEgress()).isNullOrEmpty();
  }

  @Test
  void agentEgressHasNoDnsRuleAndNoIpBlock() {
    NetworkPolicy agent = BUNDLE.get(NetworkPolicy.class, NetworkFence.AGENT_EGRESS);
    assertThat(agent.getSpec().getEgress()).hasSize(1);
    var rule = agent.getSpec().getEgress().get(0);
    assertThat(rule.getTo()).hasSize(1);
    assertThat(rule.getTo().get(0).getIpBlock()).isNull();
    assertThat(rule.getTo().get(0).getNamespaceSelector()).isNull();
    assertThat(rule.getTo().get(0).getPodSelector().getMatchLabels())
        .isEqualTo(BundleFactory.proxyPodSelector("r42"));
    assertThat(rule.getPorts())
        .singleElement()
        .satisfies(
            p -> {
              assertThat(p.getProtocol()).isEqualTo("TCP");
              assertThat(p.getPort().getIntVal()).isEqualTo(3128);
            });
  }

  @Test
  void serviceAccountMountsNoTokenAndItsRoleGrantsNothing() {
    assertThat(BUNDLE.get(ServiceAccount.class, "agent-run").getAutomountServiceAccountToken())
        .isFalse();
    assertThat(BUNDLE.get(Role.class, "agent-run").getRules()).isEmpty();
  }

  @Test
  void quotaCapsComputeStoragePodsAndForbidsNodePortsAndLoadBalancers() {
    Map<String, Quantity> hard = BUNDLE.get(ResourceQuota.class, "agent-run").getSpec().getHard();
    // The agent's 1 CPU and 512 MiB plus the proxy's default 250m and 256 MiB, plus the collect
    // sidecar's 100m and 64 MiB, which runs beside the agent.
    assertThat(hard.get("limits.cpu")).isEqualTo(new Quantity("1350m"));
    assertThat(hard.get("requests.memory")).isEqualTo(new Quantity("832Mi"));
    // 1 GiB for each pod, and the sidecar's 4/3 of the out volume (its log in base64) + 16 MiB.
    assertThat(hard.get("limits.ephemeral-storage")).isEqualTo(new Quantity("3430Mi"));
    assertThat(hard.get("pods")).isEqualTo(new Quantity("2"));
    assertThat(hard.get("services.nodeports")).isEqualTo(new Quantity("0"));
    assertThat(hard.get("services.loadbalancers")).isEqualTo(new Quantity("0"));
    var limit = BUNDLE.get(LimitRange.class, "agent-run").getSpec().getLimits().get(0);
    assertThat(limit.getType()).isEqualTo("Container");
    assertThat(limit.getDefault()).containsKeys("cpu", "memory", "ephemeral-storage");
    assertThat(limit.getDefaultRequest()).containsKeys("cpu", "memory", "ephemeral-storage");
  }

  @Test
  void jobRunsOnceUnderADeadlineAndCleansItselfUp() {
    Job job = BUNDLE.get(Job.class, "agent");
    assertThat(job.getSpec().getBackoffLimit()).isZero();
    assertThat(job.getSpec().getActiveDeadlineSeconds()).isEqualTo(600L);
    assertThat(job.getSpec().getTtlSecondsAfterFinished()).isEqualTo(300);
    PodSpec pod = job.getSpec().getTemplate().getSpec();
    assertThat(pod.getRestartPolicy()).isEqualTo("Never");
    assertThat(job.getSpec().getTemplate().getMetadata().getLabels())
        .containsAllEntriesOf(BundleFactory.agentPodSelector("r42"));
  }

  @Test
  void agentReachesTheProxyByIpBecauseItHasNoDns() {
    Container agent =
        BUNDLE.get(Job.class, "agent").getSpec().getTemplate().getSpec().getContainers().get(0);
    assertThat(agent.getEnv())
        .anySatisfy(
            e ->
                assertThat(e.getName() + "=" + e.getValue())
                    .isEqualTo("HTTPS_PROXY=http://10.43.7.9:3128"))
        .anySatisfy(
            e ->
                assertThat(e.getName() + "=" + e.getValue())
                    .isEqualTo("http_proxy=http://10.43.7.9:3128"))
        .anySatisfy(e -> assertThat(e.getName() + "=" + e.getValue()).isEqualTo("TASK=build"));
    assertThat(agent.getCommand()).containsExactly("sh", "-c", "echo hello");
    Service service = BUNDLE.get(Service.class, BundleFactory.PROXY);
    assertThat(service.getSpec().getSelector()).isEqualTo(BundleFactory.proxyPodSelector("r42"));
    assertThat(service.getSpec().getType()).isEqualTo("ClusterIP");
  }

  @Test
  void aRunCannotPointItsProxyVariablesElsewhere() {
    var spec = Specs.spec("r44");
    var sneaky =
        new dev.agentsandbox.backend.RunSpec(
            spec.runId(),
            spec.agent(),
            spec.image(),
            spec.command(),
            Map.of(
                "HTTPS_PROXY", "http://203.0.113.9:8080", "http_proxy", "http://203.0.113.9:8080"),
            spec.egress(),
            spec.resources(),
            spec.ttl(),
            spec.expiresAt(),
            false);
    Container agent =
        FACTORY
            .build(sneaky, Optional.empty(), Optional.of("10.43.7.9"))
            .get(Job.class, "agent")
            .getSpec()
            .getTemplate()
            .getSpec()
            .getContainers()
            .get(0);
    assertThat(agent.getEnv().stream().filter(e -> e.getName().equalsIgnoreCase("https_proxy")))
        .extracting(e -> e.getValue())
        .containsOnly("http://10.43.7.9:3128");
    assertThat(agent.getEnv().stream().filter(e -> e.getName().equals("HTTPS_PROXY"))).hasSize(1);
  }

  @Test
  void planRendersAsKubernetesYamlThroughAnyJackson() throws IOException {
    // The server renders Manifest bodies with its own Jackson 2; fabric8's model types carry
    // Jackson 3 serializers, so the bodies must already be plain trees.
    String yaml = new ObjectMapper(new YAMLFactory()).writeValueAsString(BUNDLE.manifests());
    assertThat(yaml)
        .contains("cpu: \"1350m\"")
        .contains("port: 3128")
        .contains("runtimeClassName: \"gvisor\"")
        .doesNotContain("intVal")
        .doesNotContain("amount:");
  }

  @Test
  void proxyIsItsOwnPodReadingItsPolicyFromTheConfigMap() throws IOException {
    Pod proxy = BUNDLE.get(Pod.class, BundleFactory.PROXY);
    assertThat(proxy.getSpec().getContainers())
        .singleElement()
        .satisfies(
            c -> {
              assertThat(c.getImage())
                  .isEqualTo("registry.example.internal/agent-sandbox/proxy:1.0");
              // The image's launcher writes this variable to /tmp/policy.json and runs --policy on
              // it.
              assertThat(c.getArgs()).isNullOrEmpty();
              assertThat(c.getEnv())
                  .singleElement()
                  .satisfies(
                      e -> {
                        assertThat(e.getName()).isEqualTo("AGENT_SANDBOX_PROXY_POLICY");
                        assertThat(e.getValueFrom().getConfigMapKeyRef().getName())
                            .isEqualTo("egress-policy");
                        assertThat(e.getValueFrom().getConfigMapKeyRef().getKey())
                            .isEqualTo("policy.json");
                      });
            });
    JsonNode policy =
        new ObjectMapper()
            .readTree(BUNDLE.get(ConfigMap.class, "egress-policy").getData().get("policy.json"));
    assertThat(policy.get("listen").asText()).isEqualTo("0.0.0.0:3128");
    assertThat(policy.get("allow").toString()).isEqualTo("[\"api.github.com\",\"*.pypi.org\"]");
    assertThat(policy.get("instance_allow").toString())
        .isEqualTo("[\"*.github.com\",\"*.pypi.org\"]");
    assertThat(policy.get("internal").isArray()).isTrue();
    assertThat(policy.get("hosts").get("git.internal").get(0).asText()).isEqualTo("10.20.0.7");
    assertThat(policy.get("run_id").asText()).isEqualTo("r42");
    assertThat(policy.get("decisions").asText()).isEqualTo("-");
  }

  @Test
  void instancePolicyAbsentIsWrittenAsNull() throws IOException {
    var spec = Specs.spec("r43");
    var unrestricted =
        new dev.agentsandbox.backend.RunSpec(
            spec.runId(),
            spec.agent(),
            spec.image(),
            spec.command(),
            spec.env(),
            new dev.agentsandbox.policy.config.RunEgress(
                spec.egress().allow(), Optional.empty(), List.of(), Map.of()),
            spec.resources(),
            spec.ttl(),
            spec.expiresAt(),
            false);
    String json =
        FACTORY
            .build(unrestricted, Optional.empty(), Optional.empty())
            .get(ConfigMap.class, "egress-policy")
            .getData()
            .get("policy.json");
    assertThat(new ObjectMapper().readTree(json).get("instance_allow").isNull()).isTrue();
  }

  static Stream<Arguments> podSpecs() {
    return Stream.of(
        Arguments.of("agent pod", BUNDLE.get(Job.class, "agent").getSpec().getTemplate().getSpec()),
        Arguments.of("proxy pod", BUNDLE.get(Pod.class, BundleFactory.PROXY).getSpec()));
  }

  @ParameterizedTest(name = "{0} is non-root, unprivileged, capability-free and seccomp-confined")
  @MethodSource("podSpecs")
  void everyPodIsHardened(String name, PodSpec pod) {
    assertThat(pod.getAutomountServiceAccountToken()).isFalse();
    assertThat(pod.getEnableServiceLinks()).isFalse();
    assertThat(pod.getHostNetwork()).isFalse();
    assertThat(pod.getHostPID()).isFalse();
    assertThat(pod.getHostIPC()).isFalse();
    assertThat(pod.getRuntimeClassName()).isEqualTo("gvisor");
    assertThat(pod.getServiceAccountName()).isEqualTo("agent-run");
    assertThat(pod.getSecurityContext().getRunAsNonRoot()).isTrue();
    assertThat(pod.getSecurityContext().getRunAsUser()).isNotZero();
    assertThat(pod.getSecurityContext().getSeccompProfile().getType()).isEqualTo("RuntimeDefault");
    assertThat(pod.getVolumes()).allSatisfy(v -> assertThat(v.getHostPath()).isNull());
    assertThat(pod.getContainers())
        .allSatisfy(
            c -> {
              assertThat(c.getSecurityContext().getRunAsNonRoot()).isTrue();
              assertThat(c.getSecurityContext().getPrivileged()).isFalse();
              assertThat(c.getSecurityContext().getAllowPrivilegeEscalation()).isFalse();
              assertThat(c.getSecurityContext().getCapabilities().getDrop()).containsExactly("ALL");
              assertThat(c.getSecurityContext().getCapabilities().getAdd()).isNullOrEmpty();
              assertThat(c.getSecurityContext().getSeccompProfile().getType())
                  .isEqualTo("RuntimeDefault");
              assertThat(c.getResources().getLimits()).containsKeys("cpu", "memory");
            });
  }

  @Test
  void withoutTheRuntimeClassNoPodNamesOne() {
    KubernetesBundle plain = FACTORY.build(Specs.spec("r42"), Optional.empty(), Optional.empty());
    assertThat(plain.get(Pod.class, BundleFactory.PROXY).getSpec().getRuntimeClassName()).isNull();
    assertThat(
            plain.get(Job.class, "agent").getSpec().getTemplate().getSpec().getRuntimeClassName())
        .isNull();
  }

  @Test
  void yamlIsOneDocumentPerObjectInCreationOrder() throws IOException {
    String yaml = BUNDLE.toYaml();
    List<JsonNode> documents = new ArrayList<>();
    ObjectMapper mapper = new ObjectMapper(new YAMLFactory());
    try (YAMLParser parser = new YAMLFactory().createParser(yaml)) {
      documents.addAll(mapper.readValues(parser, JsonNode.class).readAll());
    }
    assertThat(documents)
        .extracting(d -> d.get("kind").asText() + "/" + d.get("metadata").get("name").asText())
        .containsExactlyElementsOf(
            BUNDLE.objects().stream()
                .map(o -> o.getKind() + "/" + o.getMetadata().getName())
                .toList());
    JsonNode quota = documents.get(7);
    assertThat(quota.at("/spec/hard/limits.cpu").asText()).isEqualTo("1350m");
    assertThat(documents.get(1).at("/apiVersion").asText()).isEqualTo("networking.k8s.io/v1");
  }

  @Test
  void manifestBodiesAreWhatTheApiServerReceives() {
    List<Manifest> manifests = BUNDLE.manifests();
    assertThat(manifests).extracting(Manifest::kind).first().isEqualTo("Namespace");
    assertThat(manifests).extracting(Manifest::kind).last().isEqualTo("Job");
    // Quantities and ports as Kubernetes spells them, not as Java beans.
    String jobJson = manifests.get(manifests.size() - 1).body().toString();
    assertThat(jobJson).contains("cpu=1000m").contains("memory=512Mi");
    String proxyFence = manifests.get(3).body().toString();
    assertThat(proxyFence).contains("port=3128").doesNotContain("intVal");
  }

  @Test
  void planMarksWhereTheLaunchFillsInTheProxyAddress() {
    KubernetesBundle plan =
        FACTORY.build(Specs.spec("r42"), Optional.of("gvisor"), Optional.empty());
    List<HasMetadata> objects = plan.objects();
    assertThat(
            ((Job) objects.get(objects.size() - 1))
                .getSpec()
                .getTemplate()
                .getSpec()
                .getContainers()
                .get(0)
                .getEnv())
        .anySatisfy(
            e ->
                assertThat(e.getValue())
                    .isEqualTo("http://" + BundleFactory.PROXY_IP_AT_LAUNCH + ":3128"));
  }
}
