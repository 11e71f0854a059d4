package dev.agentsandbox.backend.k8s;

import dev.agentsandbox.backend.Labels;
import dev.agentsandbox.backend.RunCredential;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.policy.config.ProxyPolicy;
import io.fabric8.kubernetes.api.model.ConfigMapBuilder;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.IntOrString;
import io.fabric8.kubernetes.api.model.LimitRangeBuilder;
import io.fabric8.kubernetes.api.model.NamespaceBuilder;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.ResourceQuotaBuilder;
import io.fabric8.kubernetes.api.model.Secret;
import io.fabric8.kubernetes.api.model.SecretBuilder;
import io.fabric8.kubernetes.api.model.ServiceAccountBuilder;
import io.fabric8.kubernetes.api.model.ServiceBuilder;
import io.fabric8.kubernetes.api.model.batch.v1.JobBuilder;
import io.fabric8.kubernetes.api.model.rbac.RoleBindingBuilder;
import io.fabric8.kubernetes.api.model.rbac.RoleBuilder;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/** Builds one run's {@link KubernetesBundle} from its {@link RunSpec}; pure, creates nothing. */
final class BundleFactory {
  static final String NAMESPACE_PREFIX = "agent-run-";
  static final String ROLE_LABEL = "agent-sandbox.dev/role";
  static final String SERVICE_ACCOUNT = "agent-run";
  static final String POLICY_CONFIG_MAP = "egress-policy";
  static final String PROXY = "egress-proxy";
  static final String JOB = "agent";
  static final String AGENT_CONTAINER = "agent";
  static final String PROXY_CONTAINER = "proxy";

  /** Shown in a plan where the launch fills in the proxy Service's ClusterIP once assigned. */
  static final String PROXY_IP_AT_LAUNCH = "PROXY-CLUSTER-IP-ASSIGNED-AT-LAUNCH";

  static final String POLICY_FILE = "policy.json";

  /** The Secret that holds the run's credentials, one key per credential's file name. */
  static final String CREDENTIALS_SECRET = "run-credentials";

  /** What a plan shows in place of each credential's value, which is minted only at launch. */
  static final String REDACTED = "<redacted>";

  private final KubernetesBackendConfig config;
  private final NetworkFence fence;
  private final SandboxPods pods;
  private final KubernetesSerialization serialization = new KubernetesSerialization();

  BundleFactory(KubernetesBackendConfig config) {
    this.config = config;
    this.fence = new NetworkFence(config);
    this.pods = new SandboxPods(config);
  }

  static String namespaceOf(String runId) {
    return NAMESPACE_PREFIX + runId;
  }

  static Map<String, String> agentPodSelector(String runId) {
    return Map.of(Labels.RUN_ID, runId, ROLE_LABEL, "agent");
  }

  static Map<String, String> proxyPodSelector(String runId) {
    return Map.of(Labels.RUN_ID, runId, ROLE_LABEL, "proxy");
  }

  /**
   * Every object of the run, in creation order.
   *
   * @param runtimeClass the RuntimeClass both pods run under, or empty for the node's default
   * @param proxyIp the proxy Service's ClusterIP, or empty in a plan (it is assigned at launch)
   */
  KubernetesBundle build(RunSpec spec, Optional<String> runtimeClass, Optional<String> proxyIp) {
    return build(spec, runtimeClass, proxyIp, Optional.empty());
  }

  /**
   * Every object of the run, in creation order; for a session ({@code session} present) also its
   * ingress policy, and its agent pod runs the step runner with the session relay beside it.
   */
  KubernetesBundle build(
      RunSpec spec,
      Optional<String> runtimeClass,
      Optional<String> proxyIp,
      Optional<SessionWiring> session) {
    String ns = namespaceOf(spec.runId());
    Map<String, String> labels = spec.labels();
    Map<String, String> agentPod = agentPodSelector(spec.runId());
    Map<String, String> proxyPod = proxyPodSelector(spec.runId());
    List<HasMetadata> objects = new ArrayList<>();
    objects.add(namespace(ns, labels));
    objects.add(fence.defaultDeny(ns, labels));
    objects.add(fence.agentEgress(ns, labels, agentPod, proxyPod));
    objects.add(fence.proxyFence(ns, labels, agentPod, proxyPod, spec.egress().internal()));
    if (session.isPresent()) {
      objects.add(fence.sessionIngress(ns, labels, agentPod));
    }
    objects.add(
        new ServiceAccountBuilder()
            .withNewMetadata()
            .withName(SERVICE_ACCOUNT)
            .withNamespace(ns)
            .withLabels(labels)
            .endMetadata()
            .withAutomountServiceAccountToken(false)
            .build());
    // A Role with no rules: the run's identity can do nothing, in its namespace or anywhere else.
    objects.add(
        new RoleBuilder()
            .withNewMetadata()
            .withName(SERVICE_ACCOUNT)
            .withNamespace(ns)
            .withLabels(labels)
            .endMetadata()
            .withRules(List.of())
            .build());
    objects.add(
        new RoleBindingBuilder()
            .withNewMetadata()
            .withName(SERVICE_ACCOUNT)
            .withNamespace(ns)
            .withLabels(labels)
            .endMetadata()
            .addNewSubject()
            .withKind("ServiceAccount")
            .withName(SERVICE_ACCOUNT)
            .withNamespace(ns)
            .endSubject()
            .withNewRoleRef()
            .withApiGroup("rbac.authorization.k8s.io")
            .withKind("Role")
            .withName(SERVICE_ACCOUNT)
            .endRoleRef()
            .build());
    objects.add(quota(spec, ns, labels, session.isPresent()));
    objects.add(limitRange(ns, labels));
    objects.add(
        new ConfigMapBuilder()
            .withNewMetadata()
            .withName(POLICY_CONFIG_MAP)
            .withNamespace(ns)
            .withLabels(labels)
            .endMetadata()
            .withData(Map.of(POLICY_FILE, proxyPolicyJson(spec)))
            .build());
    if (!spec.proxyCredentials().isEmpty()) {
      // Before the proxy's pod, which reads them at start; redacted here, as in every plan.
      objects.add(InspectionPods.proxyCredentials(spec, Values.REDACTED));
    }
    objects.add(
        new PodBuilder()
            .withNewMetadata()
            .withName(PROXY)
            .withNamespace(ns)
            .withLabels(merge(labels, proxyPod))
            .endMetadata()
            .withSpec(pods.proxy(spec, runtimeClass))
            .build());
    objects.add(
        new ServiceBuilder()
            .withNewMetadata()
            .withName(PROXY)
            .withNamespace(ns)
            .withLabels(labels)
            .endMetadata()
            .withNewSpec()
            .withType("ClusterIP")
            .withSelector(proxyPod)
            .addNewPort()
            .withName("proxy")
            .withProtocol("TCP")
            .withPort(config.proxyPort())
            .withTargetPort(new IntOrString(config.proxyPort()))
            .endPort()
            .endSpec()
            .build());
    if (!spec.credentials().isEmpty()) {
      objects.add(credentials(spec, Values.REDACTED));
    }
    if (!spec.egress().inspect().isEmpty()) {
      // Its certificate is the proxy's, so the launch makes it once the proxy is ready.
      objects.add(InspectionPods.trust(spec, Optional.empty()));
    }
    objects.add(
        new JobBuilder()
            .withNewMetadata()
            .withName(JOB)
            .withNamespace(ns)
            .withLabels(labels)
            .endMetadata()
            .withNewSpec()
            .withBackoffLimit(0)
            .withActiveDeadlineSeconds(Math.max(1L, (spec.ttl().toMillis() + 999) / 1000))
            .withTtlSecondsAfterFinished((int) config.jobTtlAfterFinished().toSeconds())
            .withNewTemplate()
            .withNewMetadata()
            .withLabels(merge(labels, agentPod))
            .endMetadata()
            .withSpec(pods.agent(spec, runtimeClass, proxyIp, session))
            .endTemplate()
            .endSpec()
            .build());
    return new KubernetesBundle(ns, objects);
  }

  /** Whether a credentials Secret carries the run's values or, for plans, {@link #REDACTED}. */
  enum Values {
    REDACTED,
    INCLUDED
  }

  /**
   * The run's credentials as an immutable Opaque Secret in its namespace, which the agent's pod
   * alone references and which dies with the namespace. The bundle, and so every plan, holds it
   * with {@link Values#REDACTED} values; only the launch builds it with {@link Values#INCLUDED},
   * sends it and keeps it nowhere.
   */
  Secret credentials(RunSpec spec, Values values) {
    Map<String, String> data = new TreeMap<>();
    // A credential the proxy injects is its placeholder here: its value is in the proxy's Secret.
    for (RunCredential credential : spec.workloadCredentials()) {
      data.put(credential.name(), values == Values.INCLUDED ? credential.value() : REDACTED);
    }
    return new SecretBuilder()
        .withNewMetadata()
        .withName(CREDENTIALS_SECRET)
        .withNamespace(namespaceOf(spec.runId()))
        .withLabels(spec.labels())
        .endMetadata()
        .withType("Opaque")
        .withImmutable(true)
        .withStringData(data)
        .build();
  }

  private HasMetadata namespace(String ns, Map<String, String> labels) {
    Map<String, String> all = new TreeMap<>(labels);
    for (String mode : List.of("enforce", "warn", "audit")) {
      all.put("pod-security.kubernetes.io/" + mode, "restricted");
      all.put("pod-security.kubernetes.io/" + mode + "-version", config.podSecurityVersion());
    }
    return new NamespaceBuilder()
        .withNewMetadata()
        .withName(ns)
        .withLabels(all)
        .endMetadata()
        .build();
  }

  private HasMetadata quota(RunSpec spec, String ns, Map<String, String> labels, boolean session) {
    SandboxQuota q = config.quota();
    // The agent's pod counts its collect sidecar, which runs beside the agent's container, and a
    // session's relay sidecar.
    long cpuMillis = agentCpuMillis(spec) + q.proxyCpuMillis() + SandboxPods.COLLECT_CPU_MILLIS;
    long memoryMb =
        spec.resources().memoryMb() + (long) q.proxyMemoryMb() + SandboxPods.COLLECT_MEMORY_MB;
    long storageMb = 2L * q.ephemeralStorageMb() + SandboxPods.collectStorageMb(q);
    if (session) {
      cpuMillis += SessionContainers.RELAY_CPU_MILLIS;
      memoryMb += SessionContainers.RELAY_MEMORY_MB;
      storageMb += SessionContainers.RELAY_STORAGE_MB;
    }
    Map<String, Quantity> hard = new TreeMap<>();
    for (String bound : List.of("requests", "limits")) {
      hard.put(bound + ".cpu", new Quantity(cpuMillis + "m"));
      hard.put(bound + ".memory", new Quantity(memoryMb + "Mi"));
      hard.put(bound + ".ephemeral-storage", new Quantity(storageMb + "Mi"));
    }
    hard.put("pods", new Quantity("2"));
    hard.put("services", new Quantity("1"));
    hard.put("services.nodeports", new Quantity("0"));
    hard.put("services.loadbalancers", new Quantity("0"));
    hard.put("persistentvolumeclaims", new Quantity("0"));
    return new ResourceQuotaBuilder()
        .withNewMetadata()
        .withName(SERVICE_ACCOUNT)
        .withNamespace(ns)
        .withLabels(labels)
        .endMetadata()
        .withNewSpec()
        .withHard(hard)
        .endSpec()
        .build();
  }

  private HasMetadata limitRange(String ns, Map<String, String> labels) {
    Map<String, Quantity> defaults =
        Map.of(
            "cpu", new Quantity("100m"),
            "memory", new Quantity("128Mi"),
            "ephemeral-storage", new Quantity("256Mi"));
    return new LimitRangeBuilder()
        .withNewMetadata()
        .withName(SERVICE_ACCOUNT)
        .withNamespace(ns)
        .withLabels(labels)
        .endMetadata()
        .withNewSpec()
        .addNewLimit()
        .withType("Container")
        .withDefault(defaults)
        .withDefaultRequest(defaults)
        .endLimit()
        .endSpec()
        .build();
  }

  private String proxyPolicyJson(RunSpec spec) {
    return serialization.asJson(
        ProxyPolicy.forRun(
                spec.egress(),
                spec.runId(),
                config.proxyPort(),
                spec.expiresAt(),
                ProxyPolicy.PROXY_CREDENTIALS_DIR)
            .toTree());
  }

  static long agentCpuMillis(RunSpec spec) {
    return Math.max(1L, Math.round(spec.resources().cpus() * 1000));
  }

  private static Map<String, String> merge(Map<String, String> a, Map<String, String> b) {
    Map<String, String> all = new TreeMap<>(a);
    all.putAll(b);
    return all;
  }
}
