package dev.agentsandbox.backend.docker;

import static dev.agentsandbox.backend.docker.DockerItSupport.newRunId;
import static dev.agentsandbox.backend.docker.DockerItSupport.smallCaps;
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
import dev.agentsandbox.backend.docker.DockerItSupport.RecordingListener;
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

  @ParameterizedTest(name = "under {0}")
  @MethodSource("runtimes")
  void theAgentReadsOneRepositoryWithATokenItNeverHolds(String runtime) throws Exception {
    String address = github.layout.address();
    RunEgress egress =
        new RunEgress(
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
    String runId = newRunId();
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
                smallCaps(),
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
}
