package dev.agentsandbox.backend.docker;

import static dev.agentsandbox.backend.docker.DockerItSupport.SUITE;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.github.dockerjava.api.DockerClient;
import dev.agentsandbox.backend.Completion;
import dev.agentsandbox.backend.RunCredential;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.backend.Sandbox;
import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.config.Injection;
import dev.agentsandbox.policy.config.InspectedHost;
import dev.agentsandbox.policy.config.InternalDestination;
import dev.agentsandbox.policy.config.Resources;
import dev.agentsandbox.policy.config.RunEgress;
import dev.agentsandbox.policy.http.RequestRule;
import dev.agentsandbox.policy.http.RequestRules;
import dev.agentsandbox.testing.ClientCompatibility;
import dev.agentsandbox.testing.CompatUpstream;
import dev.agentsandbox.testing.Host;
import dev.agentsandbox.testing.InspectCompatibility;
import dev.agentsandbox.testing.RecordingListener;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The client compatibility suite against inspected hosts (docs/reliability.md, "Inspected hosts"):
 * inside one sandbox per runtime, each of curl, busybox wget, urllib, requests, the JDK's
 * HttpClient, Node's fetch, {@code pip install} and {@code git clone} goes {@link
 * InspectCompatibility#ROUNDS} times through a proxy that terminates TLS for the upstream's three
 * names, trusting the run's CA only through what the platform set, and must reach what the rules
 * allow and be refused the rest. The upstream is the plain suite's ({@link CompatUpstream}, its own
 * test CA, which the proxy verifies it with). {@code -Dasb.proxy.image=IMAGE} names the proxy
 * image.
 */
class InspectCompatibilityIT {
  private static final String PROXY_IMAGE =
      System.getProperty("asb.proxy.image", "agent-sandbox/proxy:dev");
  private static final CompatUpstream.Layout LAYOUT = CompatUpstream.DOCKER;
  private static final String TOKEN = "asb_inspect0compat0credential0value";
  private static DockerClient client;
  private static CompatUpstream upstream;
  private static final Set<String> runIds = ConcurrentHashMap.newKeySet();

  @BeforeAll
  static void standUp() throws Exception {
    client = DockerItSupport.requireDaemon();
    client.inspectImageCmd(ClientCompatibility.IMAGE).exec();
    assumeTrue(Host.canAddLinks(), "the upstream lives on a dummy interface: needs root and ip");
    upstream = CompatUpstream.start(LAYOUT);
  }

  @AfterAll
  static void tearDown() throws Exception {
    if (upstream != null) {
      upstream.close();
    }
    if (client != null) {
      Predicate<String> ours = runIds::contains;
      new DockerReaper(client).reap(Instant.now(), ours.negate());
    }
  }

  static List<String> runtimes() {
    return DockerItSupport.runtimes();
  }

  @ParameterizedTest(name = "every client against inspected hosts, under {0}")
  @MethodSource("runtimes")
  void everyClientTrustsTheRunCaAndHoldsToTheRules(String runtime) throws Exception {
    List<InspectedHost> inspected = new ArrayList<>();
    InspectCompatibility.rules()
        .forEach(
            (host, rules) ->
                inspected.add(
                    new InspectedHost(
                        host,
                        Optional.of(
                            new RequestRules(rules.stream().map(RequestRule::parse).toList())),
                        host.equals("web.test")
                            ? Optional.of(
                                Injection.of(InspectCompatibility.CREDENTIAL, "Authorization"))
                            : Optional.empty())));
    RunEgress egress =
        new RunEgress(
            AllowList.parse(ClientCompatibility.allowEntries(upstream)),
            Optional.empty(),
            List.of(
                InternalDestination.range(
                    "compat", LAYOUT.cidr(), upstream.httpPort(), upstream.tlsPort())),
            ClientCompatibility.hosts(upstream),
            inspected,
            Optional.of(upstream.caPem));
    int rounds = InspectCompatibility.ROUNDS;
    String runId = SUITE.newRunId();
    runIds.add(runId);
    Duration ttl = Duration.ofSeconds(240 + 60L * rounds);
    Instant expires = Instant.now().plus(Duration.ofMinutes(60));
    RunSpec spec =
        new RunSpec(
                runId,
                "it-agent",
                ClientCompatibility.IMAGE,
                InspectCompatibility.COMMAND,
                InspectCompatibility.env(upstream, rounds),
                egress,
                new Resources(1, 768, 256),
                ttl,
                expires,
                false)
            .withCredentials(
                List.of(
                    new RunCredential(
                        InspectCompatibility.CREDENTIAL, TOKEN, Optional.empty(), expires)));
    RecordingListener listener = new RecordingListener();
    DockerBackend backend =
        new DockerBackend(client, DockerBackendConfig.builder().proxyImage(PROXY_IMAGE).build());
    String output;
    Completion completion;
    try (Sandbox sandbox = backend.launch(spec, listener, runtime)) {
      completion = sandbox.await(Instant.now().plus(ttl).plusSeconds(30));
      output = listener.output();
    }
    InspectCompatibility.Verdict verdict =
        InspectCompatibility.judge(rounds, upstream, TOKEN, output, listener.decisions);
    System.out.println("inspected hosts, " + runtime + ":\n" + verdict.table());
    assertThat(completion.end())
        .as("the suite's end; output:%n%s", output)
        .isEqualTo(Completion.End.EXIT);
    assertThat(verdict.ranToEnd()).as("the suite ran to its end; output:%n%s", output).isTrue();
    assertThat(verdict.failures())
        .as(
            "failing attempts under %s%n%s%ngit http-backend: %s",
            runtime, verdict.table(), upstream.backendLog())
        .isEmpty();
    assertThat(verdict.refusals())
        .as("path-not-allowed decisions: one per refused attempt of each of the seven clients")
        .isEqualTo(7L * rounds);
  }
}
