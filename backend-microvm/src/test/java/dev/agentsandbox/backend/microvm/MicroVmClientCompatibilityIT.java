package dev.agentsandbox.backend.microvm;

import static dev.agentsandbox.backend.microvm.MicroVmItSupport.SUITE;
import static dev.agentsandbox.backend.microvm.MicroVmItSupport.cleanUpAndAssertNothingLeft;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

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
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The client compatibility suite's microVM column (docs/reliability.md): the same script, probes,
 * upstream and judging as the Docker backend's {@code ClientCompatibilityIT} ({@link
 * ClientCompatibility}, {@link CompatUpstream}), run as a whole inside one VM booted from {@value
 * ClientCompatibility#IMAGE} (software emulation unless {@code AGENT_SANDBOX_MICROVM_ACCEL} says
 * otherwise). The upstream has its own link and address ({@link CompatUpstream#MICROVM}), apart
 * from the Docker suite's and the other microVM ITs'. Every cell must pass every round; {@code
 * -Dasb.compat.vm.rounds=N} sets the rounds, else {@code -Dasb.compat.rounds=N} (20 by default).
 */
class MicroVmClientCompatibilityIT {
  private static final int ROUNDS =
      Integer.getInteger("asb.compat.vm.rounds", ClientCompatibility.ROUNDS);
  private static final CompatUpstream.Layout LAYOUT = CompatUpstream.MICROVM;

  private static MicroVmBackend backend;
  private static CompatUpstream upstream;

  @BeforeAll
  static void standUp() throws Exception {
    backend = MicroVmItSupport.requireBackend();
    try {
      backend.files().imageId(ClientCompatibility.IMAGE);
    } catch (RuntimeException e) {
      fail(
          "The client compatibility suite needs image "
              + ClientCompatibility.IMAGE
              + ": "
              + e.getMessage()
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
    if (backend != null) {
      cleanUpAndAssertNothingLeft(backend);
    }
  }

  @Test
  void everyClientEveryCellEveryTimeInOneVm() throws Exception {
    RunEgress egress =
        new RunEgress(
            AllowList.parse(ClientCompatibility.allowEntries(upstream)),
            Optional.empty(),
            List.of(
                InternalDestination.range(
                    "compat", LAYOUT.cidr(), upstream.httpPort(), upstream.tlsPort())),
            ClientCompatibility.hosts(upstream));
    // Bounded: the boot and the suite's set-up take about a minute under TCG and a round well under
    // one since the fence refuses the direct-ip attempts rather than dropping them (they used to
    // wait out their time-outs, about 210 s a round; docs/reliability.md). The TTL, about three
    // times that, ends a run that hangs, and the test then fails; the caller's deadline follows it.
    Duration ttl = Duration.ofSeconds(300 + 120L * ROUNDS);
    RunSpec spec =
        new RunSpec(
            SUITE.newRunId(),
            "it-agent",
            ClientCompatibility.IMAGE,
            ClientCompatibility.COMMAND,
            ClientCompatibility.env(upstream, ROUNDS),
            egress,
            new Resources(1, 768, 256),
            ttl,
            Instant.now().plus(ttl).plus(Duration.ofMinutes(5)),
            false);
    RecordingListener listener = new RecordingListener();
    Instant started = Instant.now();
    String output;
    Completion completion;
    try (Sandbox sandbox = backend.launch(spec, listener)) {
      completion = sandbox.await(Instant.now().plus(ttl).plusSeconds(60));
      output = listener.output();
    }
    Duration took = Duration.between(started, Instant.now());
    ClientCompatibility.Verdict verdict =
        ClientCompatibility.judge(
            "microvm", ROUNDS, upstream, output, listener.decisions, started, took);

    // What each client's first direct attempt reported: with the fence refusing, a refused
    // connection rather than a time-out (docs/reliability.md records these).
    output
        .lines()
        .filter(l -> l.startsWith("@@ ") && l.contains(" direct-ip 1 "))
        .forEach(l -> System.out.println("  direct-ip, first attempt: " + l.substring(3)));

    assertThat(completion.end())
        .as("the suite's end in the VM; output:%n%s", output)
        .isEqualTo(Completion.End.EXIT);
    assertThat(verdict.ranToEnd()).as("the suite ran to its end; output:%n%s", output).isTrue();
    assertThat(verdict.failures())
        .as(
            "failing cells in the VM%n%s%ngit http-backend: %s",
            verdict.table(), upstream.backendLog())
        .isEmpty();
    assertThat(verdict.denials())
        .as("deny decisions by host:port")
        .isEqualTo(verdict.expectedDenials());
  }
}
