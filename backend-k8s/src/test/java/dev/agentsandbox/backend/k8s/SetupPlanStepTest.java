package dev.agentsandbox.backend.k8s;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import java.io.File;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@code deploy/k3s/setup.sh plan}, the one walk-through step that needs no cluster, run for real
 * against an HTTP server on loopback standing in for the control plane: what it sends (the path,
 * the body, the token as a header) and how it judges the answer.
 */
class SetupPlanStepTest {
  private static final Path SETUP =
      Path.of(System.getProperty("basedir", "."), "..", "deploy", "k3s", "setup.sh").normalize();
  private static final String TOKEN = "asb_test_token_5b7c1d";

  private HttpServer server;
  private final AtomicReference<String> request = new AtomicReference<>();
  private volatile int status = 200;
  private volatile String answer = "";

  @BeforeEach
  void start() throws Exception {
    server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.createContext(
        "/",
        exchange -> {
          String body = new String(exchange.getRequestBody().readAllBytes(), UTF_8);
          request.set(
              exchange.getRequestMethod()
                  + " "
                  + exchange.getRequestURI().getPath()
                  + "\n"
                  + exchange.getRequestHeaders().getFirst("Authorization")
                  + "\n"
                  + exchange.getRequestHeaders().getFirst("Content-Type")
                  + "\n"
                  + body);
          byte[] bytes = answer.getBytes(UTF_8);
          exchange.sendResponseHeaders(status, bytes.length);
          exchange.getResponseBody().write(bytes);
          exchange.close();
        });
    server.start();
  }

  @AfterEach
  void stop() {
    server.stop(0);
  }

  @Test
  void sendsTheTokenAsAHeaderAndPassesTheK8sBundle() throws Exception {
    answer = plan("k8s", "runsc", Optional.of("gvisor"));
    Result result = runPlan("--agent", "helper");
    assertThat(result.status()).as(result.output()).isZero();
    assertThat(request.get())
        .isEqualTo(
            "POST /api/admin/platform/agent-sandbox/plan\nBearer "
                + TOKEN
                + "\napplication/json\n{\"agent\":\"helper\",\"command\":[\"true\"]}");
    assertThat(result.output())
        .contains("PASS  the plan uses the k8s backend")
        .contains("PASS  the bundle holds the proxy-fence NetworkPolicy")
        .contains("PASS  the agent's Job starts with the runtime-check init container")
        .contains("RESULT: PASS")
        .doesNotContain(TOKEN);
  }

  @Test
  void failsAPlanOnAnotherBackend() throws Exception {
    answer = plan("docker", "runc", Optional.empty());
    Result result = runPlan();
    assertThat(result.status()).isEqualTo(1);
    assertThat(result.output()).contains("FAIL  the plan does not use the k8s backend");
  }

  @Test
  void failsRunscWithoutTheRuntimeCheck() throws Exception {
    answer = plan("k8s", "runsc", Optional.empty());
    Result result = runPlan();
    assertThat(result.status()).isEqualTo(1);
    assertThat(result.output())
        .contains("FAIL  the runtime is runsc but the agent's Job has no runtime-check");
  }

  @Test
  void aRefusalNamesTheAnswerAndNotTheToken() throws Exception {
    status = 403;
    answer = "{\"error\":\"forbidden\",\"message\":\"token lacks agent_sandbox.read\"}";
    Result result = runPlan();
    assertThat(result.status()).isEqualTo(1);
    assertThat(result.output())
        .contains("planning agent helper on http://")
        .contains("token lacks agent_sandbox.read")
        .doesNotContain(TOKEN);
  }

  @Test
  void refusesABadAgentNameBeforeSendingAnything() throws Exception {
    Result result = runPlan("--agent", "x\"}],\"command\":[\"sh");
    assertThat(result.status()).isEqualTo(1);
    assertThat(result.output()).contains("not an agent name");
    assertThat(request.get()).isNull();
  }

  /** A plan answer whose manifests are the bundle the backend really builds. */
  private static String plan(String backend, String runtime, Optional<String> runtimeClass) {
    List<Map<String, Object>> manifests =
        new BundleFactory(Specs.config())
            .build(Specs.spec("planstep"), runtimeClass, Optional.empty()).manifests().stream()
                .map(m -> Map.of("kind", m.kind(), "name", m.name(), "body", m.body()))
                .toList();
    Map<String, Object> plan = new LinkedHashMap<>();
    plan.put("agent", "helper");
    plan.put("backend", backend);
    plan.put("runtime", runtime);
    plan.put("available", true);
    plan.put("manifests", manifests);
    return new KubernetesSerialization().asJson(plan);
  }

  private record Result(int status, String output) {}

  private Result runPlan(String... options) throws Exception {
    Path output = Files.createTempFile("setup-plan", ".out");
    try {
      ProcessBuilder builder =
          new ProcessBuilder(
                  java.util.stream.Stream.concat(
                          java.util.stream.Stream.of("bash", SETUP.toString(), "plan"),
                          java.util.stream.Stream.of(options))
                      .toList())
              .redirectErrorStream(true)
              .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
              .redirectOutput(output.toFile());
      // Straight to the loopback server, whatever proxy the machine running the build uses.
      List.of("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY")
          .forEach(builder.environment()::remove);
      builder
          .environment()
          .put("AGENT_SANDBOX_URL", "http://127.0.0.1:" + server.getAddress().getPort());
      builder.environment().put("AGENT_SANDBOX_TOKEN", TOKEN);
      Process process = builder.start();
      if (!process.waitFor(60, TimeUnit.SECONDS)) {
        process.destroyForcibly();
        throw new AssertionError("setup.sh plan did not end within 60 s");
      }
      return new Result(process.exitValue(), Files.readString(output, UTF_8));
    } finally {
      Files.deleteIfExists(output);
    }
  }
}
