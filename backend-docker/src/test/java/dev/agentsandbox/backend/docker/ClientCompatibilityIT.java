package dev.agentsandbox.backend.docker;

import static dev.agentsandbox.backend.docker.DockerItSupport.SUITE;
import static dev.agentsandbox.backend.docker.DockerItSupport.labelledResources;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.github.dockerjava.api.DockerClient;
import dev.agentsandbox.backend.Completion;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.backend.Sandbox;
import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.config.InternalDestination;
import dev.agentsandbox.policy.config.Resources;
import dev.agentsandbox.policy.config.RunEgress;
import dev.agentsandbox.testing.ClientCompatibility;
import dev.agentsandbox.testing.CompatUpstream;
import dev.agentsandbox.testing.Host;
import dev.agentsandbox.testing.RecordingListener;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The client compatibility suite (docs/reliability.md): inside one sandbox per runtime, each of
 * curl, busybox wget, Python's urllib and requests, the JDK's HttpClient, Node's fetch, {@code pip
 * install} and {@code git clone} over HTTPS goes {@link #ROUNDS} times through the run's proxy to
 * an allowed host this test serves (the body must carry the test's token), to a refused host (the
 * proxy must refuse, and its deny decision is counted: one per attempt), to the upstream's address
 * through the proxy (refused, counted) and straight to that address past the proxy (must fail: the
 * sandbox's network has no other way out). Every cell must pass every time; one flaky attempt fails
 * the test. The script, the upstream and the judging are shared with the microVM backend's suite
 * ({@link ClientCompatibility}, {@link CompatUpstream}). {@code -Dasb.compat.rounds=N} sets the
 * rounds (20 by default), {@code -Dasb.compat.runtimes=runsc} limits the runtimes.
 */
class ClientCompatibilityIT {
  static final String IMAGE = ClientCompatibility.IMAGE;
  static final int ROUNDS = ClientCompatibility.ROUNDS;
  private static final CompatUpstream.Layout LAYOUT = CompatUpstream.DOCKER;

  private static DockerClient client;
  private static CompatUpstream upstream;
  private static final Set<String> runIds = ConcurrentHashMap.newKeySet();

  @BeforeAll
  static void standUp() throws Exception {
    client = DockerItSupport.requireDaemon();
    try {
      client.inspectImageCmd(IMAGE).exec();
    } catch (RuntimeException e) {
      fail(
          "The client compatibility suite needs image "
              + IMAGE
              + ": "
              + DockerErrors.describe(e)
              + " (run images/build.sh clients)");
    }
    assumeTrue(Host.canAddLinks(), "the upstream lives on a dummy interface: needs root and ip");
    upstream = CompatUpstream.start(LAYOUT);
  }

  @AfterAll
  static void tearDown() throws Exception {
    if (upstream != null) {
      upstream.close();
    }
    if (client != null) {
      // Only this class's runs: other Docker ITs may be running on the same daemon.
      Predicate<String> ours = runIds::contains;
      new DockerReaper(client).reap(Instant.now(), ours.negate());
      assertThat(labelledResources(client))
          .as("containers, networks and volumes of this class's runs left behind")
          .noneMatch(name -> runIds.stream().anyMatch(name::contains));
    }
  }

  /** Every runtime the daemon has, or those named in {@code -Dasb.compat.runtimes=a,b}. */
  static List<String> runtimes() {
    List<String> named = List.of(System.getProperty("asb.compat.runtimes", "").split(","));
    return DockerItSupport.runtimes().stream()
        .filter(r -> named.equals(List.of("")) || named.contains(r))
        .toList();
  }

  @ParameterizedTest(name = "every client, every cell, every time, under {0}")
  @MethodSource("runtimes")
  void everyClientEveryCellEveryTime(String runtime) throws Exception {
    RunEgress egress =
        new RunEgress(
            AllowList.parse(ClientCompatibility.allowEntries(upstream)),
            Optional.empty(),
            List.of(
                InternalDestination.range(
                    "compat", LAYOUT.cidr(), upstream.httpPort(), upstream.tlsPort())),
            ClientCompatibility.hosts(upstream));
    Map<String, String> env = ClientCompatibility.env(upstream, ROUNDS);
    String runId = SUITE.newRunId();
    runIds.add(runId);
    // Bounded: a round took about 35 s per runtime on this project's 2-core VM at load average 26
    // (docs/reliability.md); the TTL ends a run that hangs, and the test then fails.
    Duration ttl = Duration.ofSeconds(180 + 60L * ROUNDS);
    RunSpec spec =
        new RunSpec(
            runId,
            "it-agent",
            IMAGE,
            ClientCompatibility.COMMAND,
            env,
            egress,
            new Resources(1, 768, 256),
            ttl,
            Instant.now().plus(Duration.ofMinutes(60)),
            false);
    RecordingListener listener = new RecordingListener();
    DockerBackend backend = new DockerBackend(client, DockerBackendConfig.defaults());
    Instant started = Instant.now();
    String output;
    Completion completion;
    try (Sandbox sandbox = backend.launch(spec, listener, runtime)) {
      completion = sandbox.await(Instant.now().plus(ttl).plusSeconds(30));
      output = listener.output();
    }
    Duration took = Duration.between(started, Instant.now());
    ClientCompatibility.Verdict verdict =
        ClientCompatibility.judge(
            runtime, ROUNDS, upstream, output, listener.decisions, started, took);

    assertThat(completion.end())
        .as("the suite's end under %s; output:%n%s", runtime, output)
        .isEqualTo(Completion.End.EXIT);
    assertThat(verdict.ranToEnd()).as("the suite ran to its end; output:%n%s", output).isTrue();
    assertThat(verdict.failures())
        .as(
            "failing cells under %s%n%s%ngit http-backend: %s",
            runtime, verdict.table(), upstream.backendLog())
        .isEmpty();
    assertThat(verdict.denials())
        .as("deny decisions by host:port")
        .isEqualTo(verdict.expectedDenials());
  }
}
