package dev.agentsandbox.backend.docker;

import static dev.agentsandbox.backend.docker.DockerItSupport.SUITE;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.github.dockerjava.api.DockerClient;
import dev.agentsandbox.backend.Completion;
import dev.agentsandbox.backend.RunCredential;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.backend.RunTrust;
import dev.agentsandbox.backend.Sandbox;
import dev.agentsandbox.backend.session.SessionSandbox;
import dev.agentsandbox.backend.session.StepEnd;
import dev.agentsandbox.backend.session.StepListener;
import dev.agentsandbox.backend.session.StepSpec;
import dev.agentsandbox.backend.session.WorkspacePath;
import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.config.Injection;
import dev.agentsandbox.policy.config.InspectedHost;
import dev.agentsandbox.policy.config.InternalDestination;
import dev.agentsandbox.policy.config.RunEgress;
import dev.agentsandbox.policy.http.RequestRule;
import dev.agentsandbox.policy.http.RequestRules;
import dev.agentsandbox.policy.net.Cidr;
import dev.agentsandbox.testing.GitHubStandIn;
import dev.agentsandbox.testing.Host;
import dev.agentsandbox.testing.RecordingListener;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * An inspected host on real Docker, under each runtime (docs/runs.md, "Inspected hosts"): the agent
 * may {@code GET} one repository path of a loopback "GitHub" with a token the proxy injects. It
 * reads it, is refused a {@code POST} and another path, and never sees the token — not in its
 * environment, its files or its output, nor in the plan, the workload container's configuration or
 * its logs. {@code -Dasb.proxy.image=IMAGE} names the proxy image (default {@code
 * agent-sandbox/proxy:dev}; it must hold a proxy that inspects: images/build.sh proxy).
 */
class DockerInspectIT {
  private static final String PROXY_IMAGE =
      System.getProperty("asb.proxy.image", "agent-sandbox/proxy:dev");
  private static DockerClient client;
  private static GitHubStandIn github;
  private static final Set<String> runIds = ConcurrentHashMap.newKeySet();
  private static final java.util.concurrent.atomic.AtomicInteger STEPS =
      new java.util.concurrent.atomic.AtomicInteger();

  @BeforeAll
  static void standUp() throws Exception {
    client = DockerItSupport.requireDaemon();
    assumeTrue(Host.canAddLinks(), "the stand-in lives on a dummy interface: needs root and ip");
    github = GitHubStandIn.start(GitHubStandIn.DOCKER);
  }

  @AfterAll
  static void tearDown() throws Exception {
    if (github != null) {
      github.close();
    }
    if (client != null) {
      Predicate<String> ours = runIds::contains;
      new DockerReaper(client).reap(Instant.now(), ours.negate());
      assertThat(DockerItSupport.labelledResources(client))
          .as("containers, networks and volumes of this class's runs left behind")
          .noneMatch(name -> runIds.stream().anyMatch(name::contains));
    }
  }

  static List<String> runtimes() {
    return DockerItSupport.runtimes();
  }

  /** The agent may GET one repository of the stand-in, with the token the proxy injects. */
  private static RunEgress egress() throws java.io.IOException {
    String address = github.layout.address();
    return new RunEgress(
        AllowList.parse(List.of(github.authority())),
        Optional.empty(),
        List.of(
            InternalDestination.range(
                "github", Cidr.parse(address + "/32"), new TreeSet<>(List.of(github.port())))),
        Map.of(GitHubStandIn.HOST, List.of(address)),
        List.of(
            new InspectedHost(
                GitHubStandIn.HOST,
                Optional.of(
                    new RequestRules(
                        List.of(RequestRule.parse("GET " + GitHubStandIn.REPOSITORY)))),
                Optional.of(Injection.of("github", "Authorization")))),
        Optional.of(github.authority.pem()));
  }

  @ParameterizedTest(name = "under {0}")
  @MethodSource("runtimes")
  void theAgentReadsOneRepositoryWithATokenItNeverHolds(String runtime) throws Exception {
    RunEgress egress = egress();
    String url = "https://" + github.authority();
    String script =
        "echo \"get=$(curl -sS -o /tmp/get -w '%{http_code}' -H \"Authorization: Bearer $GITHUB_TOKEN\" "
            + url
            + GitHubStandIn.REPOSITORY
            + ")\"; cat /tmp/get; "
            + "echo \"post=$(curl -sS -o /dev/null -w '%{http_code}' -X POST -d x "
            + url
            + GitHubStandIn.REPOSITORY
            + ")\"; "
            + "echo \"other=$(curl -sS -o /dev/null -w '%{http_code}' "
            + url
            + "/repos/acme/gadgets)\"; "
            + "echo \"file=$(cat $AGENT_SANDBOX_CREDENTIALS/github)\"; echo \"env=$GITHUB_TOKEN\"; "
            + "ls -l /run/agent-sandbox/trust; grep -c 'BEGIN CERTIFICATE' $SSL_CERT_FILE; env";
    String runId = SUITE.newRunId();
    runIds.add(runId);
    Instant expires = Instant.now().plus(Duration.ofMinutes(30));
    RunSpec spec =
        new RunSpec(
                runId,
                "it-agent",
                DockerItSupport.WORKLOAD_IMAGE,
                List.of("sh", "-c", script),
                Map.of(),
                egress,
                SUITE.smallCaps(),
                Duration.ofMinutes(3),
                expires,
                false)
            .withCredentials(
                List.of(
                    new RunCredential(
                        "github", github.token, Optional.of("GITHUB_TOKEN"), expires)));
    DockerBackend backend =
        new DockerBackend(client, DockerBackendConfig.builder().proxyImage(PROXY_IMAGE).build());
    RecordingListener listener = new RecordingListener();
    List<String> shown = new ArrayList<>();
    shown.add(backend.plan(spec).manifests().toString());
    Completion completion;
    int before = github.seen().size();
    try (Sandbox sandbox = backend.launch(spec, listener, runtime)) {
      String agent = "asb-" + runId + "-agent";
      shown.add(client.inspectContainerCmd(agent).exec().toString());
      completion = sandbox.await(Instant.now().plus(Duration.ofMinutes(2)));
    }
    String output = listener.output();
    shown.add(output);
    shown.addAll(listener.decisions);
    assertThat(completion.end()).as(output).isEqualTo(Completion.End.EXIT);
    assertThat(output)
        .as(output)
        .contains("get=200")
        .contains(github.body().strip())
        .contains("post=403")
        .contains("other=403")
        .contains("file=" + Injection.PLACEHOLDER)
        .contains("env=" + Injection.PLACEHOLDER)
        .contains("SSL_CERT_FILE=" + RunTrust.BUNDLE)
        .contains("run-ca.pem")
        .contains("ca-bundle.p12");
    assertThat(github.seen().subList(before, github.seen().size()))
        .as("the upstream saw the one allowed request, with the injected token")
        .containsExactly(
            new GitHubStandIn.Seen("GET", GitHubStandIn.REPOSITORY, "Bearer " + github.token));
    ObjectMapper json = new ObjectMapper();
    List<JsonNode> decisions = new ArrayList<>();
    for (String line : listener.decisions) {
      decisions.add(json.readTree(line));
    }
    assertThat(decisions)
        .anySatisfy(
            d -> {
              assertThat(d.path("path").asText()).isEqualTo(GitHubStandIn.REPOSITORY);
              assertThat(d.path("status").asInt()).isEqualTo(200);
              assertThat(d.path("credential").asText()).isEqualTo("github");
            })
        .anySatisfy(d -> assertThat(d.path("reason").asText()).isEqualTo("method-not-allowed"))
        .anySatisfy(d -> assertThat(d.path("reason").asText()).isEqualTo("path-not-allowed"));
    for (String text : shown) {
      assertThat(text)
          .as("the token where the workload or a reader could see it")
          .doesNotContain(github.token);
    }
  }

  /**
   * A session of the same agent (the backend's default runtime): each step runs with the session's
   * environment, so it trusts the run CA (the bundle, the variables, the Java store) and holds the
   * placeholder, while the session's proxy injects the token into the one allowed request.
   */
  @Test
  void aSessionsStepsTrustTheRunCaAndTheProxyInjectsTheToken() throws Exception {
    String runId = SUITE.newRunId();
    runIds.add(runId);
    Instant expires = Instant.now().plus(Duration.ofMinutes(30));
    RunSpec spec =
        new RunSpec(
                runId,
                "it-agent",
                DockerItSupport.WORKLOAD_IMAGE,
                List.of("<steps come later>"),
                Map.of(),
                egress(),
                // runsc's pids cap bounds the Sentry's host threads, and a session past it loses
                // its sandbox (exit 2; docs/backends/docker.md "Honest limits"): DockerSessionIT's.
                new dev.agentsandbox.policy.config.Resources(1, 256, 512),
                Duration.ofMinutes(5),
                expires,
                false)
            .withCredentials(
                List.of(
                    new RunCredential(
                        "github", github.token, Optional.of("GITHUB_TOKEN"), expires)));
    DockerBackend backend =
        new DockerBackend(client, DockerBackendConfig.builder().proxyImage(PROXY_IMAGE).build());
    String url = "https://" + github.authority() + GitHubStandIn.REPOSITORY;
    RecordingListener listener = new RecordingListener();
    int before = github.seen().size();
    List<String> shown = new ArrayList<>();
    try (SessionSandbox session = backend.openSession(spec, listener)) {
      // As the run service does: one thread waits in await for the session's whole life.
      java.util.concurrent.CompletableFuture<Completion> ended =
          new java.util.concurrent.CompletableFuture<>();
      Thread waiter =
          Thread.ofVirtual()
              .start(
                  () -> {
                    try {
                      ended.complete(session.await(Instant.now().plus(Duration.ofMinutes(5))));
                    } catch (InterruptedException e) {
                      Thread.currentThread().interrupt();
                    }
                  });
      // Two steps: the trust a step sees, then requests, each step with the session's environment.
      StepOutput trust = new StepOutput();
      StepEnd first =
          step(
              session,
              "env; ls /run/agent-sandbox/trust; "
                  + "echo \"certs=$(grep -c 'BEGIN CERTIFICATE' $SSL_CERT_FILE)\"; "
                  + "tail -c $(wc -c < /run/agent-sandbox/trust/run-ca.pem) $SSL_CERT_FILE"
                  + " | cmp -s - /run/agent-sandbox/trust/run-ca.pem && echo bundle-ends-with-run-ca; "
                  + "echo \"env=$GITHUB_TOKEN\"; "
                  + "echo x > /run/agent-sandbox/trust/run-ca.pem && echo wrote-trust",
              trust);
      StepOutput requests = new StepOutput();
      StepEnd second =
          step(
              session,
              "echo \"get=$(curl -sS --max-time 20 -o /tmp/get -w '%{http_code}' -H \"Authorization: Bearer"
                  + " $GITHUB_TOKEN\" "
                  + url
                  + ")\"; cat /tmp/get; echo; "
                  + "echo \"post=$(curl -sS --max-time 20 -o /dev/null -w '%{http_code}' -X POST -d x "
                  + url
                  + ")\"",
              requests);
      waiter.interrupt();
      shown.add(trust.text());
      shown.add(requests.text());
      shown.add(client.inspectContainerCmd("asb-" + runId + "-agent").exec().toString());
      assertThat(first.end())
          .as("%s %s %s", first.detail(), ended.getNow(null), trust.text())
          .isEqualTo(StepEnd.End.EXIT);
      assertThat(trust.text())
          .as(trust.text())
          .contains(
              RunTrust.environment().entrySet().stream()
                  .map(e -> e.getKey() + "=" + e.getValue())
                  .toList())
          .contains("run-ca.pem", "ca-bundle.pem", "ca-bundle.p12")
          .contains("env=" + Injection.PLACEHOLDER)
          .doesNotContain("wrote-trust");
      assertThat(certificates(trust.text()))
          .as("the bundle holds the run CA (after the image's own, when it has one)")
          .isGreaterThanOrEqualTo(1);
      assertThat(trust.text()).as(trust.text()).contains("bundle-ends-with-run-ca");
      assertThat(second.end())
          .as("%s %s %s", second.detail(), ended.getNow(null), requests.text())
          .isEqualTo(StepEnd.End.EXIT);
      assertThat(requests.text())
          .as(requests.text())
          .contains("get=200", github.body().strip(), "post=403");
    }
    shown.add(listener.output());
    shown.addAll(listener.decisions);
    assertThat(github.seen().subList(before, github.seen().size()))
        .as("the upstream saw the session's one allowed request, with the injected token")
        .containsExactly(
            new GitHubStandIn.Seen("GET", GitHubStandIn.REPOSITORY, "Bearer " + github.token));
    assertThat(listener.decisions)
        .as("the session's decisions: the request with its credential's name, the refused POST")
        .anyMatch(d -> d.contains("\"credential\":\"github\""))
        .anyMatch(d -> d.contains("method-not-allowed"));
    for (String text : shown) {
      assertThat(text)
          .as("the token where a step or a reader could see it")
          .doesNotContain(github.token);
    }
  }

  private static StepEnd step(SessionSandbox session, String script, StepOutput output)
      throws InterruptedException {
    return session
        .exec(
            new StepSpec(
                STEPS.incrementAndGet(),
                List.of("sh", "-c", script),
                Map.of(),
                WorkspacePath.parse("."),
                new byte[0]),
            output)
        .awaitEnd(Instant.now().plus(Duration.ofMinutes(3)))
        .orElseThrow(() -> new AssertionError("step still running after 3 min: " + output.text()));
  }

  private static int certificates(String text) {
    for (String line : text.split("\n")) {
      if (line.startsWith("certs=")) {
        return Integer.parseInt(line.substring("certs=".length()).strip());
      }
    }
    return 0;
  }

  /** A step's standard output and error, joined. */
  private static final class StepOutput implements StepListener {
    private final java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();

    @Override
    public synchronized void onOutput(byte[] chunk) {
      if (bytes.size() < (1 << 20)) {
        bytes.writeBytes(chunk);
      }
    }

    @Override
    public synchronized void onErrorOutput(byte[] chunk) {
      onOutput(chunk);
    }

    synchronized String text() {
      return bytes.toString(java.nio.charset.StandardCharsets.UTF_8);
    }
  }
}
