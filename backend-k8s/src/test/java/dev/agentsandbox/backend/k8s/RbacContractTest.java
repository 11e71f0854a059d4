package dev.agentsandbox.backend.k8s;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import dev.agentsandbox.backend.Completion;
import dev.agentsandbox.backend.Labels;
import dev.agentsandbox.backend.ReapReport;
import dev.agentsandbox.backend.Sandbox;
import dev.agentsandbox.backend.SandboxListener;
import dev.agentsandbox.backend.session.SessionSandbox;
import io.fabric8.kubernetes.api.model.NamespaceBuilder;
import io.fabric8.kubernetes.api.model.node.v1.RuntimeClassBuilder;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.dsl.NonDeletingOperation;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.mockwebserver.http.RecordedRequest;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.stream.Stream;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The RBAC contract: the backend's whole life on the mock API server (probe, plan, launch, await,
 * logs, kill, teardown, reap, leader election), every request it sent recorded as the API server's
 * authorizer sees it, and the Roles and ClusterRoles in {@code deploy/} bound to the control
 * plane's ServiceAccount checked against them in both directions: every request granted, every
 * grant used. The mock server runs no authorizer, so a missing verb would otherwise show only on a
 * real cluster (as the Lease renewal's PATCH did: leadership lost ten seconds after start).
 */
@EnableKubernetesMockClient(crud = true)
class RbacContractTest {
  private static final Path DEPLOY =
      Path.of(System.getProperty("basedir", "."), "..", "deploy").normalize();
  private static final String SERVICE_ACCOUNT = "agent-sandbox";
  private static final String CONTROL_PLANE_NAMESPACE = "agent-sandbox";

  /** Marks the backend's own requests; the test's fake controllers send theirs unmarked. */
  private static final String UNDER_TEST = "agent-sandbox-rbac-contract";

  static KubernetesClient client;
  static KubernetesMockServer server;

  /**
   * One request as the authorizer sees it (Kubernetes' RequestInfo).
   *
   * @param group the API group, empty for the core group
   * @param resource the resource, such as {@code pods}
   * @param subresource the subresource, such as {@code log}, or empty
   * @param verb the verb derived from the method, the path and {@code watch}
   * @param namespace the namespace, empty for cluster-scoped requests
   * @param name the object's name, empty for collections
   */
  record Access(
      String group,
      String resource,
      String subresource,
      String verb,
      String namespace,
      String name) {
    String qualifiedResource() {
      return subresource.isEmpty() ? resource : resource + "/" + subresource;
    }

    @Override
    public String toString() {
      return verb
          + " "
          + qualifiedResource()
          + " (group \""
          + group
          + "\""
          + (namespace.isEmpty() ? ", cluster-scoped" : ", namespace " + namespace)
          + ")";
    }
  }

  /** Derives the authorizer's view of a request from its method and path, as the API server. */
  static Access access(String method, String pathAndQuery) {
    int q = pathAndQuery.indexOf('?');
    String path = q < 0 ? pathAndQuery : pathAndQuery.substring(0, q);
    String query = q < 0 ? "" : pathAndQuery.substring(q + 1);
    boolean watch =
        Arrays.stream(query.split("&"))
            .map(p -> URLDecoder.decode(p, StandardCharsets.UTF_8))
            .anyMatch(p -> p.equals("watch=true") || p.equals("watch=1"));
    List<String> parts = Arrays.stream(path.split("/")).filter(s -> !s.isEmpty()).toList();
    List<String> rest;
    String group;
    if (parts.get(0).equals("api")) {
      group = "";
      rest = parts.subList(2, parts.size());
    } else if (parts.get(0).equals("apis")) {
      group = parts.get(1);
      rest = parts.subList(3, parts.size());
    } else {
      throw new IllegalArgumentException("not a resource request: " + pathAndQuery);
    }
    String namespace = "";
    if (rest.size() >= 3 && rest.get(0).equals("namespaces")) {
      namespace = rest.get(1);
      rest = rest.subList(2, rest.size());
    }
    String resource = rest.get(0);
    String name = rest.size() > 1 ? rest.get(1) : "";
    String subresource = rest.size() > 2 ? rest.get(2) : "";
    String verb =
        switch (method) {
          case "GET" -> name.isEmpty() ? (watch ? "watch" : "list") : "get";
          case "POST" -> "create";
          case "PUT" -> "update";
          case "PATCH" -> "patch";
          case "DELETE" -> name.isEmpty() ? "deletecollection" : "delete";
          default -> throw new IllegalArgumentException("unexpected method " + method);
        };
    return new Access(group, resource, subresource, verb, namespace, name);
  }

  /** A rule that applies to the ServiceAccount, from a Role (in one namespace) or ClusterRole. */
  record Grant(
      String source,
      String namespace,
      List<String> apiGroups,
      List<String> resources,
      List<String> resourceNames,
      List<String> verbs) {
    boolean allows(Access a, String group, String resource, String verb) {
      return (namespace.isEmpty() || namespace.equals(a.namespace()))
          && a.group().equals(group)
          && a.qualifiedResource().equals(resource)
          && a.verb().equals(verb)
          && (resourceNames.isEmpty() || resourceNames.contains(a.name()));
    }

    boolean allows(Access a) {
      return (apiGroups.contains("*") || apiGroups.contains(a.group()))
          && (resources.contains("*") || resources.contains(a.qualifiedResource()))
          && (verbs.contains("*") || verbs.contains(a.verb()))
          && (namespace.isEmpty() || namespace.equals(a.namespace()))
          && (resourceNames.isEmpty() || resourceNames.contains(a.name()));
    }
  }

  @SuppressWarnings("unchecked")
  static List<Map<String, Object>> deployDocuments() {
    ObjectMapper yaml = new ObjectMapper(new YAMLFactory());
    try (Stream<Path> files = Files.walk(DEPLOY)) {
      List<Map<String, Object>> docs = new ArrayList<>();
      for (Path file : files.filter(f -> f.toString().endsWith(".yaml")).sorted().toList()) {
        try (var parser = new YAMLFactory().createParser(file.toFile())) {
          yaml.readValues(parser, Map.class)
              .forEachRemaining(
                  d -> {
                    if (d != null) {
                      docs.add((Map<String, Object>) d);
                    }
                  });
        }
      }
      return docs;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> map(Map<String, Object> m, String key) {
    return (Map<String, Object>) m.getOrDefault(key, Map.of());
  }

  @SuppressWarnings("unchecked")
  private static List<Object> list(Map<String, Object> m, String key) {
    return (List<Object>) m.getOrDefault(key, List.of());
  }

  private static List<String> strings(Map<String, Object> m, String key) {
    return list(m, key).stream().map(String::valueOf).toList();
  }

  /** Every rule the deploy/ manifests grant to the control plane's ServiceAccount. */
  @SuppressWarnings("unchecked")
  static List<Grant> grantsToServiceAccount(List<Map<String, Object>> docs) {
    List<Grant> grants = new ArrayList<>();
    for (Map<String, Object> binding : docs) {
      String kind = String.valueOf(binding.get("kind"));
      if (!kind.equals("RoleBinding") && !kind.equals("ClusterRoleBinding")) {
        continue;
      }
      String bindingNamespace =
          kind.equals("RoleBinding")
              ? String.valueOf(map(binding, "metadata").get("namespace"))
              : "";
      boolean ours =
          list(binding, "subjects").stream()
              .map(s -> (Map<String, Object>) s)
              .anyMatch(
                  s ->
                      "ServiceAccount".equals(s.get("kind"))
                          && SERVICE_ACCOUNT.equals(s.get("name"))
                          && CONTROL_PLANE_NAMESPACE.equals(s.get("namespace")));
      if (!ours) {
        continue;
      }
      Map<String, Object> ref = map(binding, "roleRef");
      String roleKind = String.valueOf(ref.get("kind"));
      String roleName = String.valueOf(ref.get("name"));
      Map<String, Object> role =
          docs.stream()
              .filter(d -> roleKind.equals(d.get("kind")))
              .filter(d -> roleName.equals(map(d, "metadata").get("name")))
              .filter(
                  d ->
                      roleKind.equals("ClusterRole")
                          || bindingNamespace.equals(map(d, "metadata").get("namespace")))
              .findFirst()
              .orElseThrow(
                  () ->
                      new AssertionError(
                          kind + " binds " + roleKind + " " + roleName + ", which deploy/ lacks"));
      String source = roleKind + " " + roleName;
      for (Object r : list(role, "rules")) {
        Map<String, Object> rule = (Map<String, Object>) r;
        grants.add(
            new Grant(
                source,
                bindingNamespace,
                strings(rule, "apiGroups"),
                strings(rule, "resources"),
                strings(rule, "resourceNames"),
                strings(rule, "verbs")));
      }
    }
    return grants;
  }

  /** What a missing or unused grant is, in words that name it; empty when the contract holds. */
  static List<String> breaches(Set<Access> used, List<Grant> grants) {
    List<String> problems = new ArrayList<>();
    for (Access a : used) {
      if (grants.stream().noneMatch(g -> g.allows(a))) {
        problems.add(
            "missing: the backend sends "
                + a
                + " and no Role or ClusterRole bound to ServiceAccount "
                + CONTROL_PLANE_NAMESPACE
                + "/"
                + SERVICE_ACCOUNT
                + " in deploy/ grants it");
      }
    }
    for (Grant g : grants) {
      for (String group : g.apiGroups()) {
        for (String resource : g.resources()) {
          for (String verb : g.verbs()) {
            if (used.stream().noneMatch(a -> g.allows(a, group, resource, verb))) {
              problems.add(
                  "unused: "
                      + g.source()
                      + (g.namespace().isEmpty() ? "" : " (namespace " + g.namespace() + ")")
                      + " grants "
                      + verb
                      + " on "
                      + resource
                      + " (group \""
                      + group
                      + "\"), which the backend never uses");
            }
          }
        }
      }
    }
    return problems;
  }

  @Test
  void deployedRolesGrantExactlyWhatTheBackendsLifeUses(@TempDir Path dir) throws Exception {
    Set<Access> used = new LinkedHashSet<>(recordLife(dir));
    // The recording must have seen the whole life, or an empty recording would pass trivially.
    assertThat(used.stream().map(a -> a.verb() + " " + a.qualifiedResource()))
        .contains(
            "get runtimeclasses",
            "create namespaces",
            "create jobs",
            "create secrets",
            "get pods/log",
            "delete jobs",
            "delete namespaces",
            "list namespaces",
            "create leases",
            "patch leases");
    List<Grant> grants = grantsToServiceAccount(deployDocuments());
    // Outputs come from the sidecar's log: the control plane never needs to run anything in a
    // sandbox's pod, and must not be able to.
    for (Grant grant : grants) {
      assertThat(grant.resources())
          .as(grant.source())
          .doesNotContain("pods/exec", "pods/attach", "pods/portforward", "pods/*", "*");
    }
    List<String> problems = breaches(used, grants);
    assertThat(problems).as("RBAC contract of deploy/ against the backend's requests").isEmpty();
  }

  @Test
  void theContractNamesAMissingVerbAndAnUnusedGrant() {
    Access renew =
        access(
            "PATCH", "/apis/coordination.k8s.io/v1/namespaces/agent-sandbox/leases/agent-sandbox");
    Grant lease =
        new Grant(
            "Role lease",
            "agent-sandbox",
            List.of("coordination.k8s.io"),
            List.of("leases"),
            List.of(),
            List.of("get", "update"));
    assertThat(breaches(Set.of(renew), List.of(lease)))
        .containsExactly(
            "missing: the backend sends patch leases (group \"coordination.k8s.io\", namespace"
                + " agent-sandbox) and no Role or ClusterRole bound to ServiceAccount"
                + " agent-sandbox/agent-sandbox in deploy/ grants it",
            "unused: Role lease (namespace agent-sandbox) grants get on leases (group"
                + " \"coordination.k8s.io\"), which the backend never uses",
            "unused: Role lease (namespace agent-sandbox) grants update on leases (group"
                + " \"coordination.k8s.io\"), which the backend never uses");
    // A Role's grant holds in its namespace only.
    Access elsewhere =
        access("PATCH", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/x");
    assertThat(lease.allows(elsewhere)).isFalse();
  }

  @Test
  void verbsComeFromMethodsAsTheApiServerDerivesThem() {
    assertThat(access("GET", "/api/v1/namespaces?labelSelector=a%3Db"))
        .isEqualTo(new Access("", "namespaces", "", "list", "", ""));
    assertThat(access("GET", "/api/v1/namespaces/agent-run-a/pods?watch=true"))
        .isEqualTo(new Access("", "pods", "", "watch", "agent-run-a", ""));
    assertThat(access("GET", "/api/v1/namespaces/agent-run-a/pods/p/log?container=agent"))
        .isEqualTo(new Access("", "pods", "log", "get", "agent-run-a", "p"));
    assertThat(access("GET", "/api/v1/namespaces/agent-run-a"))
        .isEqualTo(new Access("", "namespaces", "", "get", "", "agent-run-a"));
    assertThat(access("DELETE", "/apis/batch/v1/namespaces/n/jobs"))
        .isEqualTo(new Access("batch", "jobs", "", "deletecollection", "n", ""));
    assertThat(access("DELETE", "/apis/batch/v1/namespaces/n/jobs/agent").verb())
        .isEqualTo("delete");
    assertThat(access("PUT", "/apis/batch/v1/namespaces/n/jobs/agent/status"))
        .isEqualTo(new Access("batch", "jobs", "status", "update", "n", "agent"));
    assertThat(access("POST", "/apis/node.k8s.io/v1/runtimeclasses"))
        .isEqualTo(new Access("node.k8s.io", "runtimeclasses", "", "create", "", ""));
  }

  /** The backend's whole life, with its own client marked; returns what that client sent. */
  private static List<Access> recordLife(Path dir) throws Exception {
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
    // An expired sandbox namespace for the reaper to find.
    client
        .namespaces()
        .resource(
            new NamespaceBuilder()
                .withNewMetadata()
                .withName("agent-run-old")
                .withLabels(
                    Map.of(
                        Labels.MANAGED_BY,
                        Labels.MANAGER,
                        Labels.RUN_ID,
                        "old",
                        Labels.EXPIRES_AT,
                        "1"))
                .endMetadata()
                .build())
        .createOr(NonDeletingOperation::update);
    drain();
    try (KubernetesClient backendClient =
            new KubernetesClientBuilder()
                .withConfig(
                    new ConfigBuilder(client.getConfiguration()).withUserAgent(UNDER_TEST).build())
                .build();
        FakeCluster cluster = new FakeCluster(client, server)) {
      KubernetesBackend backend =
          new KubernetesBackend(
              backendClient,
              Specs.config().toBuilder()
                  .proxyReadyTimeout(Duration.ofSeconds(15))
                  .pollInterval(Duration.ofMillis(20))
                  .build(),
              Clock.systemUTC());
      SandboxListener listener =
          new SandboxListener() {
            @Override
            public void onOutput(byte[] chunk) {}

            @Override
            public void onEgressDecision(String jsonLine) {}
          };
      assertThat(backend.probe().available()).isTrue();
      backend.plan(Specs.spec("c1"));

      // A run with credentials that ends by itself: launch, await, logs, teardown.
      cluster.serveProxy("c1", "10.43.0.10");
      Sandbox first = backend.launch(Specs.withCredentials("c1"), listener);
      cluster.agentPod("c1", 0);
      cluster.logs("c1", "hello\n", "{\"decision\":\"allow\"}\n");
      byte[] tar = new OutputTars().folder("out").file("out/a.txt", "a").bytes();
      cluster.collectLog("c1", OutputTars.frame(tar));
      cluster.finishJob("c1", "Complete", null);
      assertThat(first.await(Instant.now().plusSeconds(30)).end()).isEqualTo(Completion.End.EXIT);
      // Its outputs, read from the collect sidecar's log: get pods/log, no exec.
      try (var outputs = first.outputs().orElseThrow()) {
        assertThat(outputs.readAllBytes()).isEqualTo(tar);
      }
      first.teardown();

      // A run an operator kills while it runs.
      cluster.serveProxy("c2", "10.43.0.11");
      Sandbox second = backend.launch(Specs.spec("c2"), listener);
      cluster.agentPod("c2", null);
      cluster.collectLog("c2", OutputTars.frame(tar));
      second.kill();
      assertThat(second.await(Instant.now().plusSeconds(30)).end())
          .isEqualTo(Completion.End.KILLED);
      second.teardown();

      // A session: its relay's log read, then its own TLS connection to the pod (never the API
      // server), one step, closed. Sessions need no right a run does not.
      cluster.serveProxy("c3", "10.43.0.12");
      try (SessionPod pod = new SessionPod(client, server, "c3", dir).start()) {
        KubernetesBackend sessions =
            new KubernetesBackend(
                backendClient,
                KubernetesSessionTest.config(Duration.ofSeconds(90)),
                Clock.systemUTC());
        SessionSandbox session = sessions.openSession(Specs.spec("c3"), listener);
        assertThat(
                KubernetesSessionTest.run(session, 1, "true", new KubernetesSessionTest.Output())
                    .exitStatus())
            .hasValue(0);
        session.kill();
        assertThat(session.await(Instant.now().plusSeconds(60)).end())
            .isEqualTo(Completion.End.KILLED);
        session.teardown();
      }

      ReapReport reaped = backend.reap(Instant.now(), runId -> false);
      assertThat(reaped.removedRunIds()).contains("old");

      try (LeaderElectedReaper elected =
          new LeaderElectedReaper(
              backendClient,
              CONTROL_PLANE_NAMESPACE,
              "replica-a",
              new LeaderElectedReaper.Timings(
                  Duration.ofSeconds(3),
                  Duration.ofSeconds(2),
                  Duration.ofMillis(200),
                  Duration.ofSeconds(60)),
              () -> {})) {
        elected.start();
        awaitTrue("the replica leads", elected::isLeading);
        // The holder renews every retry period; wait for a renewal to have been sent.
        String firstRenewal = renewTime();
        awaitTrue("the Lease is renewed", () -> !renewTime().equals(firstRenewal));
      }
    }
    List<Access> used = new ArrayList<>();
    RecordedRequest request;
    for (int i = 0;
        i < 100_000 && (request = server.takeRequest(10, TimeUnit.MILLISECONDS)) != null;
        i++) {
      String agent = request.getHeader("User-Agent");
      if (agent != null && agent.startsWith(UNDER_TEST)) {
        used.add(access(request.getMethod(), request.getPath()));
      }
    }
    return used;
  }

  private static String renewTime() {
    var lease =
        client
            .leases()
            .inNamespace(CONTROL_PLANE_NAMESPACE)
            .withName(LeaderElectedReaper.LEASE_NAME)
            .get();
    return lease == null ? "" : String.valueOf(lease.getSpec().getRenewTime());
  }

  private static void drain() throws InterruptedException {
    for (int i = 0; i < 100_000 && server.takeRequest(1, TimeUnit.MILLISECONDS) != null; i++) {
      // discard the setup's requests
    }
  }

  /** Waits for a condition, failing after a generous bound (the bound is not a speed claim). */
  private static void awaitTrue(String what, BooleanSupplier condition) {
    Awaitility.await(what)
        .atMost(Duration.ofSeconds(60))
        .pollInterval(Duration.ofMillis(20))
        .until(condition::getAsBoolean);
  }
}
