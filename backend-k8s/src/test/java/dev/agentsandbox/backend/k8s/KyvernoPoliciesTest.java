package dev.agentsandbox.backend.k8s;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import io.fabric8.kubernetes.api.model.batch.v1.Job;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Reads the Kyverno policies and the deployment file as YAML and checks what they say: Enforce
 * everywhere, every listed rule present, the deliberately bad pod refused by every pod rule, the
 * backend's own pods accepted by all of them, and a launcher role without dangerous rights. Kyverno
 * itself cannot run here; docs/backends/k8s.md gives the {@code kyverno apply} commands.
 */
class KyvernoPoliciesTest {
  private static final Path SANDBOX =
      Path.of(System.getProperty("basedir", "."), "..", "deploy", "k3s", "sandbox").normalize();
  private static final Path KYVERNO = SANDBOX.resolve("kyverno");
  private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());
  private static final KubernetesSerialization K8S = new KubernetesSerialization();

  @SuppressWarnings("unchecked")
  private static List<Map<String, Object>> documents(Path file) {
    try (var parser = new YAMLFactory().createParser(file.toFile())) {
      List<Map<String, Object>> docs = new ArrayList<>();
      YAML.readValues(parser, Map.class).forEachRemaining(d -> docs.add((Map<String, Object>) d));
      return docs;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static List<Map<String, Object>> policies() {
    try (Stream<Path> files = Files.list(KYVERNO)) {
      return files
          .filter(f -> f.toString().endsWith(".yaml"))
          .sorted()
          .flatMap(f -> documents(f).stream())
          .filter(d -> String.valueOf(d.get("apiVersion")).startsWith("kyverno.io/"))
          .toList();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static List<Map<String, Object>> clusterPolicies() {
    return policies().stream().filter(p -> "ClusterPolicy".equals(p.get("kind"))).toList();
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> map(Object value, String... path) {
    Object current = value;
    for (String key : path) {
      current = ((Map<String, Object>) current).get(key);
    }
    return (Map<String, Object>) current;
  }

  @SuppressWarnings("unchecked")
  private static List<Map<String, Object>> rules(Map<String, Object> policy) {
    return (List<Map<String, Object>>) map(policy, "spec").get("rules");
  }

  private static String name(Map<String, Object> document) {
    return String.valueOf(map(document, "metadata").get("name"));
  }

  @Test
  void everyListedRuleIsThere() {
    assertThat(clusterPolicies().stream().map(KyvernoPoliciesTest::name))
        .containsExactlyInAnyOrder(
            "agent-sandbox-disallow-privileged",
            "agent-sandbox-disallow-host-path",
            "agent-sandbox-disallow-host-namespaces",
            "agent-sandbox-require-non-root",
            "agent-sandbox-restrict-seccomp-strict",
            "agent-sandbox-restrict-image-registries",
            "agent-sandbox-require-runtime-class",
            "agent-sandbox-restrict-launcher");
    assertThat(policies().stream().filter(p -> "ClusterCleanupPolicy".equals(p.get("kind"))))
        .hasSize(1);
  }

  @Test
  void everyPolicyAndRuleEnforces() {
    assertThat(clusterPolicies())
        .allSatisfy(
            p -> {
              assertThat(map(p, "spec").get("validationFailureAction"))
                  .as(name(p))
                  .isEqualTo("Enforce");
              assertThat(rules(p))
                  .allSatisfy(
                      r ->
                          assertThat(map(r, "validate").get("failureAction"))
                              .as(name(p) + "/" + r.get("name"))
                              .isEqualTo("Enforce"));
            });
  }

  static Stream<Arguments> podRules() {
    return clusterPolicies().stream()
        .filter(p -> !name(p).equals("agent-sandbox-restrict-launcher"))
        .flatMap(p -> rules(p).stream().map(r -> Arguments.of(name(p) + "/" + r.get("name"), r)));
  }

  @SuppressWarnings("unchecked")
  private static Object pattern(Map<String, Object> rule) {
    String registry =
        String.valueOf(
            documents(SANDBOX.resolve("agent-sandbox.yaml")).stream()
                .filter(
                    d ->
                        "ConfigMap".equals(d.get("kind"))
                            && name(d).equals("agent-sandbox-registry"))
                .findFirst()
                .map(d -> map(d, "data").get("prefix"))
                .orElseThrow());
    try {
      // Kyverno substitutes context variables before it matches the pattern.
      String json =
          YAML.writeValueAsString(map(rule, "validate").get("pattern"))
              .replace("{{registry.data.prefix}}", registry);
      return YAML.readValue(json, Object.class);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @ParameterizedTest(name = "{0} applies to every pod in agent-run-* namespaces")
  @MethodSource("podRules")
  void podRulesCoverSandboxNamespaces(String name, Map<String, Object> rule) {
    @SuppressWarnings("unchecked")
    List<Map<String, Object>> any = (List<Map<String, Object>>) map(rule, "match").get("any");
    assertThat(any)
        .singleElement()
        .satisfies(
            m -> {
              assertThat(map(m, "resources").get("kinds")).isEqualTo(List.of("Pod"));
              assertThat(map(m, "resources").get("namespaces")).isEqualTo(List.of("agent-run-*"));
            });
  }

  @ParameterizedTest(name = "{0} refuses the deliberately bad pod")
  @MethodSource("podRules")
  void badPodIsRefusedByEveryPodRule(String name, Map<String, Object> rule) {
    Map<String, Object> bad = documents(KYVERNO.resolve("test/bad-pod.yaml")).get(0);
    assertThat(KyvernoPattern.violations(pattern(rule), bad)).as(name).isNotEmpty();
  }

  @SuppressWarnings("unchecked")
  static Stream<Arguments> backendPods() {
    KubernetesBundle bundle =
        new BundleFactory(Specs.config())
            .build(Specs.spec("r42"), Optional.of("gvisor"), Optional.of("10.43.0.9"));
    Map<String, Object> proxy =
        K8S.convertValue(
            bundle.get(io.fabric8.kubernetes.api.model.Pod.class, BundleFactory.PROXY), Map.class);
    Map<String, Object> agent =
        Map.of(
            "kind",
            "Pod",
            "spec",
            K8S.convertValue(
                bundle.get(Job.class, "agent").getSpec().getTemplate().getSpec(), Map.class));
    // With credentials, the agent's pod has one more init container and two more volumes.
    Map<String, Object> withCredentials =
        Map.of(
            "kind",
            "Pod",
            "spec",
            K8S.convertValue(
                new BundleFactory(Specs.config())
                    .build(
                        Specs.withCredentials("r43"),
                        Optional.of("gvisor"),
                        Optional.of("10.43.0.9"))
                    .get(Job.class, "agent")
                    .getSpec()
                    .getTemplate()
                    .getSpec(),
                Map.class));
    // A session's: the runner's copy, the relay sidecar under its own uid, and credentials.
    Map<String, Object> session =
        Map.of(
            "kind",
            "Pod",
            "spec",
            K8S.convertValue(
                new BundleFactory(Specs.config())
                    .build(
                        Specs.withCredentials("r44"),
                        Optional.of("gvisor"),
                        Optional.of("10.43.0.9"),
                        Optional.of(SessionWiring.planned()))
                    .get(Job.class, "agent")
                    .getSpec()
                    .getTemplate()
                    .getSpec(),
                Map.class));
    return podRules()
        .flatMap(
            rule ->
                Stream.of(
                    Arguments.of(rule.get()[0], "proxy pod", rule.get()[1], proxy),
                    Arguments.of(rule.get()[0], "agent pod", rule.get()[1], agent),
                    Arguments.of(
                        rule.get()[0],
                        "agent pod with credentials",
                        rule.get()[1],
                        withCredentials),
                    Arguments.of(rule.get()[0], "session's agent pod", rule.get()[1], session)));
  }

  @ParameterizedTest(name = "{0} admits the backend's {1}")
  @MethodSource("backendPods")
  void backendPodsPassEveryPodRule(
      String name, String pod, Map<String, Object> rule, Map<String, Object> resource) {
    assertThat(KyvernoPattern.violations(pattern(rule), resource))
        .as(name + " on " + pod)
        .isEmpty();
  }

  @Test
  @SuppressWarnings("unchecked")
  void launcherMayCreateOnlyManagedAgentRunNamespaces() {
    Map<String, Object> launcher =
        clusterPolicies().stream()
            .filter(p -> name(p).equals("agent-sandbox-restrict-launcher"))
            .findFirst()
            .orElseThrow();
    Map<String, Object> create = rules(launcher).get(0);
    Map<String, Object> subject =
        ((List<Map<String, Object>>)
                ((List<Map<String, Object>>) map(create, "match").get("any"))
                    .get(0)
                    .get("subjects"))
            .get(0);
    assertThat(subject)
        .containsEntry("kind", "ServiceAccount")
        .containsEntry("name", "agent-sandbox")
        .containsEntry("namespace", "agent-sandbox");
    Object pattern = map(create, "validate").get("pattern");
    Map<String, Object> ours =
        K8S.convertValue(
            new BundleFactory(Specs.config())
                .build(Specs.spec("r42"), Optional.empty(), Optional.empty())
                .objects()
                .get(0),
            Map.class);
    assertThat(KyvernoPattern.violations(pattern, ours)).isEmpty();
    assertThat(
            KyvernoPattern.violations(
                pattern, documents(KYVERNO.resolve("test/bad-namespace.yaml")).get(0)))
        .isNotEmpty();
    Map<String, Object> unlabelled = Map.of("metadata", Map.of("name", "agent-run-x"));
    assertThat(KyvernoPattern.violations(pattern, unlabelled)).isNotEmpty();
    // Every namespace the launcher creates must carry the Pod Security labels.
    assertThat(
            KyvernoPattern.violations(
                pattern,
                documents(KYVERNO.resolve("test/bad-namespace-no-pod-security.yaml")).get(0)))
        .anySatisfy(v -> assertThat(v).contains("pod-security.kubernetes.io/enforce"));
    Map<String, List<String>> denied = new java.util.LinkedHashMap<>();
    for (Map<String, Object> deny : rules(launcher).subList(1, rules(launcher).size())) {
      List<Map<String, Object>> conditions =
          (List<Map<String, Object>>) map(deny, "validate", "deny", "conditions").get("any");
      denied.put(
          String.valueOf(deny.get("name")),
          conditions.stream().map(c -> c.get("key") + " " + c.get("value")).toList());
      assertThat(conditions).allSatisfy(c -> assertThat(c).containsEntry("operator", "NotEquals"));
    }
    String label = "\"app.kubernetes.io/managed-by\" || ''}}";
    assertThat(denied)
        .containsExactly(
            Map.entry(
                "launcher-writes-only-in-agent-run-namespaces",
                List.of("{{request.namespace}} agent-run-*")),
            Map.entry(
                "launcher-deletes-only-managed-agent-run-namespaces",
                List.of(
                    "{{request.oldObject.metadata.name}} agent-run-*",
                    "{{request.oldObject.metadata.labels." + label + " agent-sandbox")),
            Map.entry(
                "launcher-updates-only-managed-agent-run-namespaces",
                List.of(
                    "{{request.oldObject.metadata.name}} agent-run-*",
                    "{{request.oldObject.metadata.labels." + label + " agent-sandbox",
                    "{{request.object.metadata.labels." + label + " agent-sandbox")),
            Map.entry(
                "launcher-touches-only-its-own-lease",
                List.of(
                    "{{request.namespace}} agent-sandbox",
                    "{{request.name}} agent-sandbox-reaper")));
    // Creates, updates and deletes alike.
    assertThat(((List<Map<String, Object>>) map(rules(launcher).get(1), "match").get("any")).get(0))
        .satisfies(
            m ->
                assertThat(map(m, "resources").get("operations"))
                    .isEqualTo(List.of("CREATE", "UPDATE", "DELETE")));
  }

  @ParameterizedTest(name = "a backend pod with {0} is refused")
  @org.junit.jupiter.params.provider.ValueSource(strings = {"hostNetwork", "hostPID", "hostIPC"})
  @SuppressWarnings("unchecked")
  void hostNamespacesAreRefusedOneByOne(String field) {
    Map<String, Object> rule =
        rules(
                clusterPolicies().stream()
                    .filter(p -> name(p).equals("agent-sandbox-disallow-host-namespaces"))
                    .findFirst()
                    .orElseThrow())
            .get(0);
    KubernetesBundle bundle =
        new BundleFactory(Specs.config())
            .build(Specs.spec("r42"), Optional.of("gvisor"), Optional.of("10.43.0.9"));
    Map<String, Object> proxy =
        K8S.convertValue(
            bundle.get(io.fabric8.kubernetes.api.model.Pod.class, BundleFactory.PROXY), Map.class);
    assertThat(KyvernoPattern.violations(pattern(rule), proxy)).isEmpty();
    Map<String, Object> spec = new java.util.HashMap<>((Map<String, Object>) proxy.get("spec"));
    spec.put(field, true);
    Map<String, Object> hostile = new java.util.HashMap<>(proxy);
    hostile.put("spec", spec);
    assertThat(KyvernoPattern.violations(pattern(rule), hostile))
        .containsExactly("/spec/" + field + ": true does not match false");
  }

  @Test
  @SuppressWarnings("unchecked")
  void theControlPlaneAcceptsConnectionsOnlyOnItsPort() {
    List<Map<String, Object>> docs = documents(SANDBOX.resolve("agent-sandbox.yaml"));
    Map<String, Object> deny =
        docs.stream()
            .filter(d -> "NetworkPolicy".equals(d.get("kind")) && name(d).equals("default-deny"))
            .findFirst()
            .orElseThrow();
    assertThat(map(deny, "spec").get("podSelector")).isEqualTo(Map.of());
    assertThat(map(deny, "spec").get("policyTypes")).isEqualTo(List.of("Ingress", "Egress"));
    Map<String, Object> controlPlane =
        docs.stream()
            .filter(d -> "NetworkPolicy".equals(d.get("kind")) && name(d).equals("control-plane"))
            .findFirst()
            .orElseThrow();
    Object port =
        docs.stream()
            .filter(d -> "Deployment".equals(d.get("kind")))
            .map(
                d ->
                    ((List<Map<String, Object>>)
                            ((List<Map<String, Object>>)
                                    map(d, "spec", "template", "spec").get("containers"))
                                .get(0)
                                .get("ports"))
                        .get(0)
                        .get("containerPort"))
            .findFirst()
            .orElseThrow();
    List<Map<String, Object>> ingress =
        (List<Map<String, Object>>) map(controlPlane, "spec").get("ingress");
    assertThat(ingress)
        .singleElement()
        .satisfies(
            rule ->
                assertThat(rule.get("ports"))
                    .isEqualTo(List.of(Map.of("protocol", "TCP", "port", port))));
  }

  @Test
  @SuppressWarnings("unchecked")
  void cleanupPolicyDeletesOnlyManagedAgentRunNamespacesPastTheirExpiry() {
    Map<String, Object> cleanup =
        policies().stream()
            .filter(p -> "ClusterCleanupPolicy".equals(p.get("kind")))
            .findFirst()
            .orElseThrow();
    Map<String, Object> resources =
        map(
            ((List<Map<String, Object>>) map(cleanup, "spec", "match").get("any")).get(0),
            "resources");
    assertThat(resources.get("kinds")).isEqualTo(List.of("Namespace"));
    assertThat(resources.get("names")).isEqualTo(List.of("agent-run-*"));
    assertThat(map(resources, "selector", "matchLabels"))
        .containsEntry("app.kubernetes.io/managed-by", "agent-sandbox");
    assertThat(map(cleanup, "spec").get("schedule")).isEqualTo("*/5 * * * *");
    assertThat(String.valueOf(map(cleanup, "spec", "conditions")))
        .contains("agent-sandbox.dev/expires-at", "time_after");
  }

  private static final Set<String> FORBIDDEN_VERBS = Set.of("bind", "escalate", "impersonate", "*");
  private static final Set<String> FORBIDDEN_RESOURCES =
      Set.of("pods/exec", "pods/attach", "pods/portforward", "nodes", "nodes/proxy", "*");

  @SuppressWarnings("unchecked")
  private static List<Map<String, Object>> launcherRules() {
    return documents(SANDBOX.resolve("agent-sandbox.yaml")).stream()
        .filter(d -> "ClusterRole".equals(d.get("kind")))
        .flatMap(d -> ((List<Map<String, Object>>) d.get("rules")).stream())
        .toList();
  }

  @Test
  @SuppressWarnings("unchecked")
  void launcherRoleHasNoDangerousRights() {
    assertThat(launcherRules())
        .isNotEmpty()
        .allSatisfy(
            r -> {
              assertThat((List<String>) r.get("verbs"))
                  .doesNotContainAnyElementsOf(FORBIDDEN_VERBS);
              assertThat((List<String>) r.get("resources"))
                  .doesNotContainAnyElementsOf(FORBIDDEN_RESOURCES);
              assertThat((List<String>) r.get("apiGroups")).doesNotContain("*");
            });
    // It writes a run's credentials Secret and can never read one back, anywhere.
    assertThat(launcherRules())
        .filteredOn(r -> ((List<String>) r.get("resources")).contains("secrets"))
        .singleElement()
        .satisfies(
            r -> {
              assertThat((List<String>) r.get("resources")).containsExactly("secrets");
              assertThat((List<String>) r.get("verbs")).containsExactly("create");
            });
  }

  /**
   * Kyverno's rule that keeps the launcher's writes inside agent-run-* namespaces lists kinds; a
   * kind the bundle creates and the list lacks could be written into any namespace.
   */
  @Test
  @SuppressWarnings("unchecked")
  void launcherConfinementCoversEveryNamespacedKindOfTheBundle() {
    Map<String, Object> launcher =
        clusterPolicies().stream()
            .filter(p -> name(p).equals("agent-sandbox-restrict-launcher"))
            .findFirst()
            .orElseThrow();
    Map<String, Object> writes =
        rules(launcher).stream()
            .filter(r -> "launcher-writes-only-in-agent-run-namespaces".equals(r.get("name")))
            .findFirst()
            .orElseThrow();
    List<String> kinds =
        (List<String>)
            map(((List<Map<String, Object>>) map(writes, "match").get("any")).get(0), "resources")
                .get("kinds");
    KubernetesBundle bundle =
        new BundleFactory(Specs.config())
            .build(
                Specs.withCredentials("r42"),
                Optional.of("gvisor"),
                Optional.empty(),
                Optional.of(SessionWiring.planned()));
    List<String> namespaced =
        bundle.objects().stream()
            .filter(o -> o.getMetadata().getNamespace() != null)
            .map(io.fabric8.kubernetes.api.model.HasMetadata::getKind)
            .distinct()
            .toList();
    assertThat(namespaced).contains("Secret", "Job", "Pod");
    assertThat(kinds).containsAll(namespaced);
  }

  @Test
  @SuppressWarnings("unchecked")
  void launcherRoleCanCreateEveryObjectOfTheBundle() {
    Map<String, String> plural =
        Map.ofEntries(
            Map.entry("Namespace", "namespaces"),
            Map.entry("NetworkPolicy", "networkpolicies"),
            Map.entry("ServiceAccount", "serviceaccounts"),
            Map.entry("Role", "roles"),
            Map.entry("RoleBinding", "rolebindings"),
            Map.entry("ResourceQuota", "resourcequotas"),
            Map.entry("LimitRange", "limitranges"),
            Map.entry("ConfigMap", "configmaps"),
            Map.entry("Pod", "pods"),
            Map.entry("Service", "services"),
            Map.entry("Secret", "secrets"),
            Map.entry("Job", "jobs"));
    KubernetesBundle bundle =
        new BundleFactory(Specs.config())
            .build(
                Specs.withCredentials("r42"),
                Optional.empty(),
                Optional.empty(),
                Optional.of(SessionWiring.planned()));
    for (var object : bundle.objects()) {
      String resource = plural.get(object.getKind());
      String group =
          object.getApiVersion().contains("/") ? object.getApiVersion().split("/")[0] : "";
      for (String verb : List.of("create")) {
        assertThat(launcherRules())
            .as(verb + " " + resource)
            .anySatisfy(
                r -> {
                  assertThat((List<String>) r.get("apiGroups")).contains(group);
                  assertThat((List<String>) r.get("resources")).contains(resource);
                  assertThat((List<String>) r.get("verbs")).contains(verb);
                });
      }
    }
  }
}
