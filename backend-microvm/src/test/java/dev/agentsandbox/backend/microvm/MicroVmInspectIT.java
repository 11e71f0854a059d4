package dev.agentsandbox.backend.microvm;

import static dev.agentsandbox.backend.microvm.MicroVmItSupport.SUITE;
import static dev.agentsandbox.backend.microvm.MicroVmItSupport.cleanUpAndAssertNothingLeft;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.agentsandbox.backend.Completion;
import dev.agentsandbox.backend.RunCredential;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.backend.RunTrust;
import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.config.Injection;
import dev.agentsandbox.policy.config.InspectedHost;
import dev.agentsandbox.policy.config.InternalDestination;
import dev.agentsandbox.policy.config.RunEgress;
import dev.agentsandbox.policy.http.RequestRule;
import dev.agentsandbox.policy.http.RequestRules;
import dev.agentsandbox.policy.net.Cidr;
import dev.agentsandbox.testing.GitHubStandIn;
import dev.agentsandbox.testing.RecordingListener;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * An inspected host in a real VM (docs/runs.md, "Inspected hosts"): the agent may {@code GET} one
 * repository path of a loopback "GitHub" with a token the proxy injects. It reads it, is refused a
 * {@code POST} and another path, and never sees the token — not in its environment, its files or
 * its output, nor in anything the backend hands the guest. One VM.
 */
class MicroVmInspectIT {
  private static MicroVmBackend backend;
  private static GitHubStandIn github;

  @BeforeAll
  static void standUp() throws Exception {
    backend = MicroVmItSupport.requireBackend();
    github = GitHubStandIn.start(GitHubStandIn.MICROVM);
  }

  @AfterAll
  static void tearDown() throws Exception {
    if (github != null) {
      github.close();
    }
    if (backend != null) {
      cleanUpAndAssertNothingLeft(backend);
    }
  }

  @Test
  void theAgentReadsOneRepositoryWithATokenItNeverHolds() throws Exception {
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
            + "echo \"bundle=$SSL_CERT_FILE\"; ls -l /run/agent-sandbox/trust; "
            + "grep -c 'BEGIN CERTIFICATE' $SSL_CERT_FILE; env; cat /run/agent-sandbox/trust/run-ca.pem";
    Instant expires = Instant.now().plus(Duration.ofMinutes(30));
    RunSpec spec =
        new RunSpec(
                SUITE.newRunId(),
                "it-agent",
                MicroVmItSupport.WORKLOAD_IMAGE,
                List.of("sh", "-c", script),
                Map.of(),
                egress,
                SUITE.smallCaps(),
                Duration.ofMinutes(5),
                expires,
                false)
            .withCredentials(
                List.of(
                    new RunCredential(
                        "github", github.token, Optional.of("GITHUB_TOKEN"), expires)));
    RecordingListener listener = new RecordingListener();
    List<String> shown = new ArrayList<>();
    shown.add(backend.plan(spec).manifests().toString());
    Completion completion;
    try (MicroVmSandbox sandbox = (MicroVmSandbox) backend.launch(spec, listener)) {
      Path dir = backend.config().runDir().resolve(spec.runId());
      // What the guest is handed: its initramfs. The token is not in it.
      shown.add(
          new String(
              Files.readAllBytes(dir.resolve("initramfs.cpio")),
              java.nio.charset.StandardCharsets.ISO_8859_1));
      shown.add(Files.readString(dir.resolve("proxy-policy.json")));
      completion = sandbox.await(Instant.now().plus(Duration.ofMinutes(4)));
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
        .contains("bundle=" + RunTrust.BUNDLE)
        .contains("NODE_EXTRA_CA_CERTS=" + RunTrust.RUN_CA)
        .contains("run-ca.pem")
        .contains("ca-bundle.p12");
    assertThat(github.seen())
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
              assertThat(d.path("decision").asText()).isEqualTo("allow");
              assertThat(d.path("path").asText()).isEqualTo(GitHubStandIn.REPOSITORY);
              assertThat(d.path("status").asInt()).isEqualTo(200);
              assertThat(d.path("credential").asText()).isEqualTo("github");
            })
        .anySatisfy(
            d -> {
              assertThat(d.path("method").asText()).isEqualTo("POST");
              assertThat(d.path("reason").asText()).isEqualTo("method-not-allowed");
            })
        .anySatisfy(
            d -> {
              assertThat(d.path("path").asText()).isEqualTo("/repos/acme/gadgets");
              assertThat(d.path("reason").asText()).isEqualTo("path-not-allowed");
            });
    for (String text : shown) {
      assertThat(text)
          .as("the token anywhere the guest or a reader could see it")
          .doesNotContain(github.token);
    }
  }
}
