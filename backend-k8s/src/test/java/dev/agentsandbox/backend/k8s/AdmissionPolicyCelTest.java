package dev.agentsandbox.backend.k8s;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import dev.cel.common.CelAbstractSyntaxTree;
import dev.cel.common.types.SimpleType;
import dev.cel.common.values.NullValue;
import dev.cel.compiler.CelCompiler;
import dev.cel.compiler.CelCompilerFactory;
import dev.cel.parser.CelStandardMacro;
import dev.cel.runtime.CelEvaluationException;
import dev.cel.runtime.CelRuntime;
import dev.cel.runtime.CelRuntimeFactory;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * The ValidatingAdmissionPolicy in {@code deploy/k3s/sandbox/admission/} evaluated as the API
 * server would: its match condition, its variables and each validation compiled and run by Google's
 * CEL implementation against admission requests the launcher may make and requests it must not. A
 * validation that cannot be evaluated counts as a refusal, as with {@code failurePolicy: Fail}.
 */
class AdmissionPolicyCelTest {
  private static final Path FILE =
      Path.of(
              System.getProperty("basedir", "."),
              "..",
              "deploy",
              "k3s",
              "sandbox",
              "admission",
              "restrict-launcher.yaml")
          .normalize();
  private static final String LAUNCHER = "system:serviceaccount:agent-sandbox:agent-sandbox";
  private static final KubernetesSerialization K8S = new KubernetesSerialization();

  private static final CelCompiler COMPILER =
      CelCompilerFactory.standardCelCompilerBuilder()
          // has() and the other macros Kubernetes' CEL environment has.
          .setStandardMacros(CelStandardMacro.STANDARD_MACROS)
          .addVar("request", SimpleType.DYN)
          .addVar("object", SimpleType.DYN)
          .addVar("oldObject", SimpleType.DYN)
          .addVar("namespaceObject", SimpleType.DYN)
          .addVar("variables", SimpleType.DYN)
          .build();
  private static final CelRuntime RUNTIME = CelRuntimeFactory.standardCelRuntimeBuilder().build();

  @SuppressWarnings("unchecked")
  private static List<Map<String, Object>> documents() {
    ObjectMapper yaml = new ObjectMapper(new YAMLFactory());
    try (var parser = new YAMLFactory().createParser(FILE.toFile())) {
      List<Map<String, Object>> docs = new ArrayList<>();
      yaml.readValues(parser, Map.class).forEachRemaining(d -> docs.add((Map<String, Object>) d));
      return docs;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static Map<String, Object> policy() {
    return documents().stream()
        .filter(d -> "ValidatingAdmissionPolicy".equals(d.get("kind")))
        .findFirst()
        .orElseThrow();
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> spec(Map<String, Object> doc) {
    return (Map<String, Object>) doc.get("spec");
  }

  @SuppressWarnings("unchecked")
  private static List<Map<String, Object>> listOf(Map<String, Object> m, String key) {
    return (List<Map<String, Object>>) m.getOrDefault(key, List.of());
  }

  private static Object eval(String expression, Map<String, Object> activation) {
    try {
      CelAbstractSyntaxTree ast = COMPILER.compile(expression).getAst();
      return RUNTIME.createProgram(ast).eval(activation);
    } catch (CelEvaluationException e) {
      return e;
    } catch (dev.cel.common.CelValidationException e) {
      throw new AssertionError("the policy's expression does not compile: " + expression, e);
    }
  }

  /**
   * The policy's verdict on one request: empty when admitted, else the failed validations' messages
   * (or the match condition's "not matched", which admits).
   */
  static List<String> refusals(
      Map<String, Object> request, Object object, Object oldObject, Object namespaceObject) {
    Map<String, Object> activation = new HashMap<>();
    activation.put("request", request);
    activation.put("object", object == null ? NullValue.NULL_VALUE : object);
    activation.put("oldObject", oldObject == null ? NullValue.NULL_VALUE : oldObject);
    activation.put(
        "namespaceObject", namespaceObject == null ? NullValue.NULL_VALUE : namespaceObject);
    Map<String, Object> spec = spec(policy());
    for (Map<String, Object> condition : listOf(spec, "matchConditions")) {
      if (!Boolean.TRUE.equals(eval(String.valueOf(condition.get("expression")), activation))) {
        return List.of();
      }
    }
    Map<String, Object> variables = new LinkedHashMap<>();
    activation.put("variables", variables);
    for (Map<String, Object> variable : listOf(spec, "variables")) {
      Object value = eval(String.valueOf(variable.get("expression")), activation);
      variables.put(String.valueOf(variable.get("name")), value);
    }
    List<String> refused = new ArrayList<>();
    for (Map<String, Object> validation : listOf(spec, "validations")) {
      Object verdict = eval(String.valueOf(validation.get("expression")), activation);
      if (!Boolean.TRUE.equals(verdict)) {
        refused.add(
            String.valueOf(validation.get("message")).strip()
                + (verdict instanceof Exception e
                    ? " [evaluation error: " + e.getMessage() + "]"
                    : ""));
      }
    }
    return refused;
  }

  private static Map<String, Object> request(
      String operation, String group, String resource, String namespace, String name) {
    return Map.of(
        "operation", operation,
        "resource", Map.of("group", group, "version", "v1", "resource", resource),
        "namespace", namespace,
        "name", name,
        "userInfo", Map.of("username", LAUNCHER));
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> sandboxNamespace() {
    return K8S.convertValue(
        new BundleFactory(Specs.config())
            .build(Specs.spec("r42"), Optional.empty(), Optional.empty())
            .objects()
            .get(0),
        Map.class);
  }

  private static Map<String, Object> namespace(String name, Map<String, String> labels) {
    return Map.of("metadata", Map.of("name", name, "labels", labels));
  }

  private static Map<String, Object> withoutLabel(Map<String, Object> ns, String label) {
    @SuppressWarnings("unchecked")
    Map<String, Object> metadata = new HashMap<>((Map<String, Object>) ns.get("metadata"));
    @SuppressWarnings("unchecked")
    Map<String, String> labels = new HashMap<>((Map<String, String>) metadata.get("labels"));
    labels.remove(label);
    metadata.put("labels", labels);
    return Map.of("metadata", metadata);
  }

  private static Map<String, Object> namespacedCreate(String resource, String ns, String name) {
    return request("CREATE", "", resource, ns, name);
  }

  @Test
  void theLauncherMayDoWhatARunNeeds() {
    Map<String, Object> ours = sandboxNamespace();
    assertThat(refusals(request("CREATE", "", "namespaces", "", "agent-run-r42"), ours, null, null))
        .isEmpty();
    assertThat(refusals(request("DELETE", "", "namespaces", "", "agent-run-r42"), null, ours, null))
        .isEmpty();
    for (String resource :
        List.of("pods", "services", "configmaps", "secrets", "serviceaccounts", "resourcequotas")) {
      assertThat(refusals(namespacedCreate(resource, "agent-run-r42", "x"), Map.of(), null, ours))
          .as(resource)
          .isEmpty();
    }
    assertThat(
            refusals(
                request("DELETE", "batch", "jobs", "agent-run-r42", "agent"), null, Map.of(), ours))
        .isEmpty();
    Map<String, Object> home = namespace("agent-sandbox", Map.of());
    for (String operation : List.of("CREATE", "UPDATE")) {
      assertThat(
              refusals(
                  request(
                      operation,
                      "coordination.k8s.io",
                      "leases",
                      "agent-sandbox",
                      "agent-sandbox-reaper"),
                  Map.of(),
                  operation.equals("UPDATE") ? Map.of() : null,
                  home))
          .as("the reaper's Lease, " + operation)
          .isEmpty();
    }
  }

  @Test
  void theLauncherMayNotTakeTheCluster() {
    Map<String, Object> ours = sandboxNamespace();
    Map<String, Object> kubeSystem =
        namespace("kube-system", Map.of("kubernetes.io/metadata.name", "kube-system"));
    Map<String, Object> foreignRun =
        namespace("agent-run-theirs", Map.of("app.kubernetes.io/managed-by", "someone-else"));
    Map<String, Object> cases = new LinkedHashMap<>();
    cases.put(
        "a pod in kube-system",
        refusals(namespacedCreate("pods", "kube-system", "p"), Map.of(), null, kubeSystem));
    cases.put(
        "a pod in an agent-run-* namespace it does not manage",
        refusals(namespacedCreate("pods", "agent-run-theirs", "p"), Map.of(), null, foreignRun));
    cases.put(
        "a Secret in kube-system",
        refusals(namespacedCreate("secrets", "kube-system", "s"), Map.of(), null, kubeSystem));
    cases.put(
        "a Secret at home, beside the control plane's own",
        refusals(
            namespacedCreate("secrets", "agent-sandbox", "s"),
            Map.of(),
            null,
            namespace("agent-sandbox", Map.of())));
    cases.put(
        "a ConfigMap at home",
        refusals(
            namespacedCreate("configmaps", "agent-sandbox", "c"),
            Map.of(),
            null,
            namespace("agent-sandbox", Map.of())));
    cases.put(
        "another Lease at home",
        refusals(
            request("UPDATE", "coordination.k8s.io", "leases", "agent-sandbox", "kube-scheduler"),
            Map.of(),
            Map.of(),
            namespace("agent-sandbox", Map.of())));
    cases.put(
        "a Lease in kube-system",
        refusals(
            request(
                "CREATE", "coordination.k8s.io", "leases", "kube-system", "agent-sandbox-reaper"),
            Map.of(),
            null,
            kubeSystem));
    cases.put(
        "a ClusterRoleBinding",
        refusals(
            request("CREATE", "rbac.authorization.k8s.io", "clusterrolebindings", "", "x"),
            Map.of(),
            null,
            null));
    cases.put(
        "a namespace kube-victim",
        refusals(
            request("CREATE", "", "namespaces", "", "kube-victim"),
            namespace("kube-victim", Map.of("app.kubernetes.io/managed-by", "agent-sandbox")),
            null,
            null));
    cases.put(
        "an agent-run-* namespace without the managed-by label",
        refusals(
            request("CREATE", "", "namespaces", "", "agent-run-r42"),
            withoutLabel(ours, "app.kubernetes.io/managed-by"),
            null,
            null));
    cases.put(
        "a sandbox namespace without Pod Security enforcement",
        refusals(
            request("CREATE", "", "namespaces", "", "agent-run-r42"),
            withoutLabel(ours, "pod-security.kubernetes.io/enforce"),
            null,
            null));
    cases.put(
        "deleting kube-system",
        refusals(request("DELETE", "", "namespaces", "", "kube-system"), null, kubeSystem, null));
    cases.put(
        "deleting an agent-run-* namespace it does not manage",
        refusals(
            request("DELETE", "", "namespaces", "", "agent-run-theirs"), null, foreignRun, null));
    cases.put(
        "labelling a foreign namespace as its own",
        refusals(
            request("UPDATE", "", "namespaces", "", "agent-run-theirs"),
            namespace("agent-run-theirs", Map.of("app.kubernetes.io/managed-by", "agent-sandbox")),
            foreignRun,
            null));
    cases.put(
        "removing its label from a sandbox namespace",
        refusals(
            request("UPDATE", "", "namespaces", "", "agent-run-r42"),
            withoutLabel(ours, "app.kubernetes.io/managed-by"),
            ours,
            null));
    cases.put(
        "exec into a pod in kube-system",
        refusals(
            Map.of(
                "operation", "CONNECT",
                "resource", Map.of("group", "", "version", "v1", "resource", "pods"),
                "subResource", "exec",
                "namespace", "kube-system",
                "name", "coredns-1",
                "userInfo", Map.of("username", LAUNCHER)),
            Map.of(),
            null,
            kubeSystem));
    // Refused by a validation that evaluated to false, not by an expression that broke.
    assertThat(cases)
        .allSatisfy(
            (what, refused) ->
                assertThat((List<?>) refused)
                    .as(what)
                    .isNotEmpty()
                    .noneMatch(r -> String.valueOf(r).contains("evaluation error")));
  }

  @Test
  void otherUsersAreNotItsBusinessAndKubeSystemIsNotExempt() {
    Map<String, Object> admin =
        Map.of(
            "operation", "CREATE",
            "resource", Map.of("group", "", "version", "v1", "resource", "pods"),
            "namespace", "kube-system",
            "name", "p",
            "userInfo", Map.of("username", "kubernetes-admin"));
    assertThat(refusals(admin, Map.of(), null, namespace("kube-system", Map.of()))).isEmpty();

    Map<String, Object> spec = spec(policy());
    assertThat(spec).containsEntry("failurePolicy", "Fail");
    @SuppressWarnings("unchecked")
    Map<String, Object> constraints = (Map<String, Object>) spec.get("matchConstraints");
    assertThat(constraints).doesNotContainKeys("namespaceSelector", "excludeResourceRules");
    assertThat(listOf(constraints, "resourceRules"))
        .singleElement()
        .satisfies(
            rule -> {
              assertThat(rule.get("operations"))
                  .isEqualTo(List.of("CREATE", "UPDATE", "DELETE", "CONNECT"));
              assertThat(rule.get("resources")).isEqualTo(List.of("*", "*/*"));
              assertThat(rule.get("apiGroups")).isEqualTo(List.of("*"));
            });
    Map<String, Object> binding =
        documents().stream()
            .filter(d -> "ValidatingAdmissionPolicyBinding".equals(d.get("kind")))
            .findFirst()
            .orElseThrow();
    assertThat(spec(binding))
        .containsEntry("policyName", "agent-sandbox-restrict-launcher")
        .containsEntry("validationActions", List.of("Deny"))
        .doesNotContainKey("matchResources");
    assertThat(String.valueOf(policy().get("apiVersion")))
        .isEqualTo("admissionregistration.k8s.io/v1");
  }
}
