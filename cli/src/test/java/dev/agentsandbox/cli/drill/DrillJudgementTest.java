package dev.agentsandbox.cli.drill;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.agentsandbox.cli.drill.DrillObservation.AuditRef;
import dev.agentsandbox.cli.drill.DrillObservation.Decision;
import dev.agentsandbox.cli.drill.DrillObservation.Refusal;
import dev.agentsandbox.cli.drill.DrillTranscript.Chain;
import dev.agentsandbox.cli.drill.DrillTranscript.Configuration;
import dev.agentsandbox.cli.drill.DrillTranscript.Host;
import dev.agentsandbox.cli.drill.DrillTranscript.Leftovers;
import dev.agentsandbox.cli.drill.DrillTranscript.StepResult;
import dev.agentsandbox.cli.drill.DrillTranscript.Versions;
import dev.agentsandbox.policy.event.EgressRecorded;
import dev.agentsandbox.policy.event.Refused;
import dev.agentsandbox.policy.event.RunEvent;
import dev.agentsandbox.policy.event.TimedOut;
import dev.agentsandbox.policy.event.TornDown;
import dev.agentsandbox.policy.net.Reason;
import dev.agentsandbox.runs.audit.PlainJson;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The drill's judgement, without a server: for every step, what a held layer looks like (the
 * outputs are those seen under runc and runsc) and, row by row, an observation in which one layer
 * did NOT hold — a connection that succeeded, a decision that allowed, a missing audit row, a cap
 * that did not bite — which must fail the step, the drill's verdict and its exit code.
 */
class DrillJudgementTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String RUN = "r0000000000000000001";
  private static final DrillSetup SETUP =
      new DrillSetup(
          "d1",
          "drill",
          "unlisted.test",
          "198.18.5.1:8080",
          "169.254.169.254:80",
          List.of("198.18.5.2:9090"),
          "unlisted.test",
          List.of("/var/run/docker.sock", "/srv/data"),
          List.of(),
          256,
          128,
          30);

  /** One case: a step, an observation of it, and whether it held. */
  record Case(String step, DrillObservation seen, boolean held, String failingLayer) {}

  private static DrillObservation ran(
      String output, Integer exit, List<Decision> egress, List<AuditRef> audit) {
    return new DrillObservation(RUN, "exited", "exit", exit, output, egress, audit, null);
  }

  /** A row of {@code runId} as the vocabulary writes it. */
  private static AuditRef row(long id, String runId, RunEvent event) {
    return new AuditRef(
        id, event.type().wireName(), "h" + id, runId, PlainJson.node(event.toTree()));
  }

  private static AuditRef row(long id, RunEvent event) {
    return row(id, RUN, event);
  }

  private static AuditRef deny(long id, String host, int port) {
    return row(
        id,
        new EgressRecorded(
            false,
            Instant.parse("2026-11-30T10:00:00Z"),
            "172.30.0.2:40000",
            port == 443 ? "CONNECT" : "GET",
            host,
            port,
            Reason.NOT_ALLOWED,
            Optional.empty(),
            false,
            List.of()));
  }

  private static TornDown tornDown(String end) {
    return new TornDown(
        end,
        Optional.empty(),
        "docker",
        "runc",
        true,
        Optional.empty(),
        Optional.empty(),
        0,
        0,
        Optional.empty());
  }

  private static final AuditRef TEARDOWN = row(90, tornDown("exit"));

  private static List<AuditRef> withTeardown(AuditRef... rows) {
    List<AuditRef> all = new ArrayList<>(List.of(rows));
    all.add(TEARDOWN);
    return all;
  }

  private static final String UNLISTED_HELD =
      "drill: https-code=000\ndrill: https-exit=56\ndrill: http-code=403\ndrill: http-exit=0\n";
  private static final List<Decision> UNLISTED_DENIED =
      List.of(
          new Decision("deny", "unlisted.test", 443, "not-allowed"),
          new Decision("deny", "unlisted.test", 80, "not-allowed"));
  private static final List<AuditRef> UNLISTED_ROWS =
      withTeardown(deny(10, "unlisted.test", 443), deny(11, "unlisted.test", 80));
  private static final List<AuditRef> METADATA_ROWS = withTeardown(deny(12, "169.254.169.254", 80));
  private static final String ESCALATION_HELD =
      "drill: uid=65534\ndrill: capprm=0000000000000000\ndrill: capeff=0000000000000000\n"
          + "drill: capamb=0000000000000000\ndrill: nonewprivs=1\ndrill: chroot-exit=1\n"
          + "drill: done=yes\n";
  private static final String SECRETS_HELD =
      "drill: absent=/var/run/docker.sock\ndrill: absent=/srv/data\ndrill: done=yes\n";

  private static final String TARGET_RUN = "r0000000000000000002";
  private static final String TARGET_HELD =
      "drill: listening=1\ndrill: connection=1\ndrill: self-check=1\ndrill: address=172.30.0.3\n"
          + "drill: proxy=172.30.0.2:3128\ndrill: ready=yes\n";
  private static final String ATTACK_HELD =
      "drill: direct=172.30.0.3 direct-exit=28\n"
          + "drill: proxied=172.30.0.3 proxied-code=403\ndrill: proxied-exit=0\n"
          + "drill: peer-proxy=172.30.0.2:3128 peer-proxy-exit=7\ndrill: done=yes\n";
  private static final List<Decision> PEER_DENIED =
      List.of(new Decision("deny", "172.30.0.3", 8080, "non-public-address"));
  private static final List<AuditRef> PEER_ROWS = withTeardown(deny(14, "172.30.0.3", 8080));

  /** The other live sandbox as seen: its output, its proxy's decisions, its status. */
  private static DrillObservation target(String output, List<Decision> egress, String status) {
    try {
      return new DrillObservation(
          TARGET_RUN,
          status,
          status,
          null,
          output,
          egress,
          List.of(row(91, TARGET_RUN, tornDown("killed"))),
          null);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  private static DrillObservation attack(
      String output, List<Decision> egress, List<AuditRef> audit, DrillObservation target) {
    return ran(output, 0, egress, audit).withPeer(target);
  }

  static Stream<Arguments> cases() {
    Map<String, Case> rows = new LinkedHashMap<>();
    rows.put(
        "unlisted host: refused by proxy, audited, torn down",
        new Case(
            "unlisted-host-through-proxy",
            ran(UNLISTED_HELD, 0, UNLISTED_DENIED, UNLISTED_ROWS),
            true,
            null));
    rows.put(
        "unlisted host: the HTTPS request got an answer",
        new Case(
            "unlisted-host-through-proxy",
            ran(
                UNLISTED_HELD
                    .replace("https-code=000", "https-code=200")
                    .replace("https-exit=56", "https-exit=0"),
                0,
                UNLISTED_DENIED,
                UNLISTED_ROWS),
            false,
            "workload"));
    rows.put(
        "unlisted host: the proxy allowed one port",
        new Case(
            "unlisted-host-through-proxy",
            ran(
                UNLISTED_HELD,
                0,
                List.of(
                    new Decision("deny", "unlisted.test", 443, "not-allowed"),
                    new Decision("allow", "unlisted.test", 80, "allowed")),
                UNLISTED_ROWS),
            false,
            "proxy"));
    rows.put(
        "unlisted host: no deny row in the audit log",
        new Case(
            "unlisted-host-through-proxy",
            ran(UNLISTED_HELD, 0, UNLISTED_DENIED, withTeardown()),
            false,
            "audit"));
    rows.put(
        "unlisted host: the run was not torn down",
        new Case(
            "unlisted-host-through-proxy",
            ran(UNLISTED_HELD, 0, UNLISTED_DENIED, UNLISTED_ROWS.subList(0, 2)),
            false,
            "cleanup"));
    rows.put(
        "direct connect: no route (curl 7)",
        new Case(
            "direct-connect-without-proxy",
            ran("drill: code=000\ndrill: exit=7\n", 0, List.of(), withTeardown()),
            true,
            null));
    rows.put(
        "direct connect: the connection succeeded",
        new Case(
            "direct-connect-without-proxy",
            ran("drill: code=200\ndrill: exit=0\n", 0, List.of(), withTeardown()),
            false,
            "network"));
    rows.put(
        "direct connect: connected, then the peer reset (curl 56 is a connection)",
        new Case(
            "direct-connect-without-proxy",
            ran("drill: code=000\ndrill: exit=56\n", 0, List.of(), withTeardown()),
            false,
            "network"));
    rows.put(
        "direct connect: the script printed nothing (fails closed)",
        new Case(
            "direct-connect-without-proxy",
            ran("", 127, List.of(), withTeardown()),
            false,
            "network"));
    rows.put(
        "overridden proxy variables: timed out (curl 28)",
        new Case(
            "proxy-variables-overridden",
            ran("drill: code=000\ndrill: exit=28\n", 0, List.of(), withTeardown()),
            true,
            null));
    rows.put(
        "overridden proxy variables: the agent's proxy answered",
        new Case(
            "proxy-variables-overridden",
            ran("drill: code=200\ndrill: exit=0\n", 0, List.of(), withTeardown()),
            false,
            "network"));
    rows.put(
        "proxy variables through the API: 400 env_refused, audited",
        new Case(
            "proxy-variables-through-api",
            new DrillObservation(
                null,
                null,
                null,
                null,
                "",
                List.of(),
                List.of(
                    row(
                        20,
                        null,
                        new Refused(
                            "env_refused",
                            "running agent drill: the environment is refused",
                            List.of(),
                            List.of("HTTPS_PROXY"),
                            List.of("echo", "drill-d1-env"),
                            List.of(),
                            List.of()))),
                new Refusal(400, "env_refused")),
            true,
            null));
    rows.put(
        "proxy variables through the API: accepted and run",
        new Case(
            "proxy-variables-through-api",
            ran("drill-d1-env\n", 0, List.of(), withTeardown()),
            false,
            "api"));
    rows.put(
        "metadata: unreachable directly, ip-literal through the proxy",
        new Case(
            "metadata-address",
            ran(
                "drill: direct-code=000\ndrill: direct-exit=7\ndrill: proxied-code=403\n"
                    + "drill: proxied-exit=0\n",
                0,
                List.of(new Decision("deny", "169.254.169.254", 80, "ip-literal")),
                METADATA_ROWS),
            true,
            null));
    rows.put(
        "metadata: the direct request got the metadata",
        new Case(
            "metadata-address",
            ran(
                "drill: direct-code=200\ndrill: direct-exit=0\ndrill: proxied-code=403\n"
                    + "drill: proxied-exit=0\n",
                0,
                List.of(new Decision("deny", "169.254.169.254", 80, "ip-literal")),
                METADATA_ROWS),
            false,
            "network"));
    rows.put(
        "host and gateway: nothing connects",
        new Case(
            "host-and-gateway",
            ran(
                "drill: gateway=172.27.0.1\ndrill: target=198.18.5.2:9090 exit=7\n"
                    + "drill: target=172.27.0.1:22 exit=28\ndrill: done=yes\n",
                0,
                List.of(),
                withTeardown()),
            true,
            null));
    rows.put(
        "host and gateway: the host's service answered",
        new Case(
            "host-and-gateway",
            ran(
                "drill: gateway=172.27.0.1\ndrill: target=198.18.5.2:9090 exit=0\n"
                    + "drill: target=172.27.0.1:22 exit=7\ndrill: done=yes\n",
                0,
                List.of(),
                withTeardown()),
            false,
            "network"));
    rows.put(
        "host and gateway: the given host target was never tried",
        new Case(
            "host-and-gateway",
            ran(
                "drill: gateway=172.27.0.1\ndrill: target=172.27.0.1:22 exit=7\n"
                    + "drill: done=yes\n",
                0,
                List.of(),
                withTeardown()),
            false,
            "network"));
    rows.put(
        "dns: neither lookup answers",
        new Case(
            "dns",
            ran("drill: resolver-exit=1\ndrill: direct-exit=1\n", 0, List.of(), withTeardown()),
            true,
            null));
    rows.put(
        "dns: the sandbox's resolver answered",
        new Case(
            "dns",
            ran(
                "drill: answer=unlisted.test\ndrill: resolver-exit=0\ndrill: direct-exit=1\n",
                0,
                List.of(),
                withTeardown()),
            false,
            "network"));
    rows.put(
        "secrets: nothing there",
        new Case("secrets", ran(SECRETS_HELD, 0, List.of(), withTeardown()), true, null));
    rows.put(
        "secrets: the Docker socket is mounted",
        new Case(
            "secrets",
            ran(
                SECRETS_HELD.replace("absent=/var/run/docker.sock", "present=/var/run/docker.sock"),
                0,
                List.of(),
                withTeardown()),
            false,
            "workload"));
    rows.put(
        "secrets: an admin token was found",
        new Case(
            "secrets",
            ran(SECRETS_HELD + "drill: found=/data/admin-token\n", 0, List.of(), withTeardown()),
            false,
            "workload"));
    rows.put(
        "escalation: nobody, no capabilities, no setuid",
        new Case(
            "privilege-escalation",
            ran(ESCALATION_HELD, 0, List.of(), withTeardown()),
            true,
            null));
    rows.put(
        "escalation: an effective capability",
        new Case(
            "privilege-escalation",
            ran(
                ESCALATION_HELD.replace("capeff=0000000000000000", "capeff=00000000a80425fb"),
                0,
                List.of(),
                withTeardown()),
            false,
            "workload"));
    rows.put(
        "escalation: running as root",
        new Case(
            "privilege-escalation",
            ran(ESCALATION_HELD.replace("uid=65534", "uid=0"), 0, List.of(), withTeardown()),
            false,
            "workload"));
    rows.put(
        "escalation: a setuid program",
        new Case(
            "privilege-escalation",
            ran(ESCALATION_HELD + "drill: setid=/bin/su\n", 0, List.of(), withTeardown()),
            false,
            "workload"));
    rows.put(
        "fork bomb under runc: a fork fails",
        new Case(
            "fork-bomb",
            ran(
                "drill: fork-bomb=starting\nsh: can't fork: Resource temporarily unavailable\n",
                2,
                List.of(),
                withTeardown()),
            true,
            null));
    rows.put(
        "fork bomb under gVisor: the sandbox is killed",
        new Case(
            "fork-bomb",
            ran("drill: fork-bomb=starting\n", 2, List.of(), withTeardown()),
            true,
            null));
    rows.put(
        "fork bomb: every process started",
        new Case(
            "fork-bomb",
            ran(
                "drill: fork-bomb=starting\ndrill: forks-started=320\n",
                0,
                List.of(),
                withTeardown()),
            false,
            "limits"));
    rows.put(
        "memory under runc: the hog is killed",
        new Case(
            "memory-exhaustion",
            ran("drill: memory-hog=starting\ndrill: hog-exit=137\n", 0, List.of(), withTeardown()),
            true,
            null));
    rows.put(
        "memory under gVisor: the sandbox is killed",
        new Case(
            "memory-exhaustion",
            ran("drill: memory-hog=starting\n", 137, List.of(), withTeardown()),
            true,
            null));
    rows.put(
        "memory: still growing when the deadline killed it (not the cap's doing)",
        new Case(
            "memory-exhaustion",
            new DrillObservation(
                RUN,
                "deadline",
                "deadline",
                137,
                "drill: memory-hog=starting\n",
                List.of(),
                withTeardown(),
                null),
            false,
            "limits"));
    rows.put(
        "fork bomb: still running when the deadline killed it",
        new Case(
            "fork-bomb",
            new DrillObservation(
                RUN,
                "deadline",
                "deadline",
                137,
                "drill: fork-bomb=starting\n",
                List.of(),
                withTeardown(),
                null),
            false,
            "limits"));
    rows.put(
        "memory: the hog held it all",
        new Case(
            "memory-exhaustion",
            ran("drill: memory-hog=starting\ndrill: hog-exit=0\n", 0, List.of(), withTeardown()),
            false,
            "limits"));
    rows.put(
        "run forever: killed at the deadline",
        new Case(
            "run-forever",
            new DrillObservation(
                RUN,
                "deadline",
                "deadline",
                137,
                "drill: forever=started\n",
                List.of(),
                withTeardown(row(30, new TimedOut(60, "killed at the deadline"))),
                null),
            true,
            null));
    rows.put(
        "run forever: it exited on its own before the deadline",
        new Case(
            "run-forever",
            ran("drill: forever=started\n", 0, List.of(), withTeardown()),
            false,
            "deadline"));
    rows.put(
        "another sandbox: nothing reached it, its proxy or its listener",
        new Case(
            "another-live-sandbox",
            attack(ATTACK_HELD, PEER_DENIED, PEER_ROWS, target(TARGET_HELD, List.of(), "killed")),
            true,
            null));
    rows.put(
        "another sandbox: a direct connection was made",
        new Case(
            "another-live-sandbox",
            attack(
                ATTACK_HELD.replace("direct-exit=28", "direct-exit=52"),
                PEER_DENIED,
                PEER_ROWS,
                target(TARGET_HELD, List.of(), "killed")),
            false,
            "network"));
    rows.put(
        "another sandbox: its listener accepted a connection",
        new Case(
            "another-live-sandbox",
            attack(
                ATTACK_HELD,
                PEER_DENIED,
                PEER_ROWS,
                target(TARGET_HELD + "drill: connection=2\n", List.of(), "killed")),
            false,
            "target"));
    rows.put(
        "another sandbox: its proxy made a decision (someone used it)",
        new Case(
            "another-live-sandbox",
            attack(
                ATTACK_HELD,
                PEER_DENIED,
                PEER_ROWS,
                target(
                    TARGET_HELD,
                    List.of(new Decision("deny", "172.30.0.3", 8080, "ip-literal")),
                    "killed")),
            false,
            "target"));
    rows.put(
        "another sandbox: the other run's proxy answered",
        new Case(
            "another-live-sandbox",
            attack(
                ATTACK_HELD.replace("peer-proxy-exit=7", "peer-proxy-exit=0"),
                PEER_DENIED,
                PEER_ROWS,
                target(TARGET_HELD, List.of(), "killed")),
            false,
            "network"));
    rows.put(
        "another sandbox: this run's proxy allowed it",
        new Case(
            "another-live-sandbox",
            attack(
                ATTACK_HELD.replace("proxied-code=403", "proxied-code=200"),
                List.of(new Decision("allow", "172.30.0.3", 8080, "allowed")),
                PEER_ROWS,
                target(TARGET_HELD, List.of(), "killed")),
            false,
            "proxy"));
    rows.put(
        "another sandbox: no deny row in the audit log",
        new Case(
            "another-live-sandbox",
            attack(
                ATTACK_HELD, PEER_DENIED, withTeardown(), target(TARGET_HELD, List.of(), "killed")),
            false,
            "audit"));
    rows.put(
        "another sandbox: the target was gone before the attack ended",
        new Case(
            "another-live-sandbox",
            attack(ATTACK_HELD, PEER_DENIED, PEER_ROWS, target(TARGET_HELD, List.of(), "deadline")),
            false,
            "target"));
    rows.put(
        "another sandbox: an address the target printed was not tried",
        new Case(
            "another-live-sandbox",
            attack(
                ATTACK_HELD,
                PEER_DENIED,
                PEER_ROWS,
                target(
                    TARGET_HELD.replace("drill: ready", "drill: address=10.99.0.3\ndrill: ready"),
                    List.of(),
                    "killed")),
            false,
            "network"));
    rows.put(
        "another sandbox: its own check was not counted (a silent listener proves nothing)",
        new Case(
            "another-live-sandbox",
            attack(
                ATTACK_HELD,
                PEER_DENIED,
                PEER_ROWS,
                target(
                    TARGET_HELD
                        .replace("drill: connection=1\n", "")
                        .replace("self-check=1", "self-check=0"),
                    List.of(),
                    "killed")),
            false,
            "target"));
    rows.put(
        "another sandbox: no target was started",
        new Case(
            "another-live-sandbox", ran(ATTACK_HELD, 0, PEER_DENIED, PEER_ROWS), false, "target"));
    return rows.entrySet().stream().map(e -> Arguments.of(e.getKey(), e.getValue()));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("cases")
  void eachLayerIsJudgedFromWhatWasSeen(String name, Case c) {
    DrillStep step = DrillSteps.byName(SETUP, c.step());
    StepResult result = StepResult.of(step, c.seen());
    assertThat(result.verdict())
        .as(result.checks().toString())
        .isEqualTo(c.held() ? "held" : "failed");
    if (!c.held()) {
      assertThat(result.checks())
          .filteredOn(check -> !check.held())
          .extracting(DrillCheck::layer)
          .as(result.checks().toString())
          .contains(c.failingLayer());
      DrillTranscript transcript = transcript(List.of(result));
      assertThat(transcript.verdict()).isEqualTo("failed");
      assertThat(Drill.exitCode(transcript.verdict())).isEqualTo(Drill.LAYER_FAILED);
    }
  }

  @Test
  void aDrillWhoseStepsAllHeldExitsZero() {
    Map<String, StepResult> firstHeld = new LinkedHashMap<>();
    cases()
        .map(a -> (Case) a.get()[1])
        .filter(Case::held)
        .forEach(
            c ->
                firstHeld.putIfAbsent(
                    c.step(), StepResult.of(DrillSteps.byName(SETUP, c.step()), c.seen())));
    List<StepResult> results =
        DrillSteps.all(SETUP).stream().map(s -> firstHeld.get(s.name())).toList();
    DrillTranscript transcript = transcript(results);
    assertThat(transcript.verdict()).isEqualTo("held");
    assertThat(Drill.exitCode(transcript.verdict())).isZero();
    assertThat(DrillVerifier.judgementProblems(transcript))
        .as("a transcript with one held result per step name verifies its own judgement")
        .isEmpty();
  }

  @Test
  void aLongOutputIsTruncatedOnceAndReadsBackUnchanged() {
    String long1 = "drill: x=1\n" + "y".repeat(20_000);
    String once = DrillObservation.truncate(long1);
    assertThat(once)
        .hasSizeLessThan(DrillObservation.MAX_OUTPUT + 40)
        .endsWith("[truncated by the drill]");
    assertThat(DrillObservation.truncate(once)).isEqualTo(once);
  }

  @Test
  void aRunStillLiveAtTheEndFailsTheDrill() {
    Leftovers leftovers = DrillEnd.leftoversOf(Map.of(RUN, "running"), List.of(RUN));
    assertThat(leftovers.verdict()).isEqualTo("failed");
    assertThat(DrillEnd.leftoversOf(Map.of(RUN, "deadline"), List.of()).verdict())
        .isEqualTo("held");
  }

  @Test
  void fewerRunsAtOnceByDefaultWhereTheGuestsAreEmulated() {
    assertThat(Drill.defaultParallel("emulated")).isEqualTo(Drill.PARALLEL_EMULATED);
    assertThat(Drill.defaultParallel("container")).isEqualTo(Drill.PARALLEL);
    assertThat(Drill.PARALLEL_EMULATED).isLessThan(Drill.PARALLEL);
  }

  @Test
  void whatTheAttackLearnsFromTheTargetIsCheckedBeforeItBecomesItsArguments() {
    // The target is a sandbox: what it prints is hostile, and becomes the attack's arguments.
    DrillObservation hostile =
        target(
            "drill: listening=1\ndrill: connection=1\ndrill: self-check=1\n"
                + "drill: address=172.30.0.3;reboot\ndrill: address=172.30.0.4\n"
                + "drill: address=127.0.0.1\ndrill: proxy=172.30.0.2:3128\ndrill: ready=yes\n",
            List.of(),
            "running");
    assertThat(PeerSandboxStep.learnedFromPeer(hostile))
        .contains(List.of("8080", "172.30.0.2:3128", "172.30.0.4"));
    assertThat(
            PeerSandboxStep.learnedFromPeer(
                target(TARGET_HELD.replace("172.30.0.2:3128", "$(reboot):3128"), List.of(), "x")))
        .as("a proxy that is not an address and port")
        .isEmpty();
    assertThat(
            PeerSandboxStep.learnedFromPeer(
                target(TARGET_HELD.replace("drill: ready=yes\n", ""), List.of(), "running")))
        .as("not ready yet")
        .isEmpty();
    StepResult result =
        StepResult.of(
            DrillSteps.byName(SETUP, "another-live-sandbox"),
            attack(ATTACK_HELD, PEER_DENIED, PEER_ROWS, target(TARGET_HELD, List.of(), "killed")));
    assertThat(result.command()).endsWith("drill", "8080", "172.30.0.2:3128", "172.30.0.3");
    assertThat(result.peerCommand()).isNotEmpty();
    assertThat(result.auditRowIds()).contains(14L, 90L, 91L);
  }

  @Test
  void verifyCatchesAVerdictEditedToHeldOverAFailingObservation(@TempDir Path dir)
      throws Exception {
    StepResult failing =
        StepResult.of(
            DrillSteps.byName(SETUP, "direct-connect-without-proxy"),
            ran("drill: code=200\ndrill: exit=0\n", 0, List.of(), withTeardown()));
    assertThat(failing.verdict()).isEqualTo("failed");
    List<DrillCheck> forged =
        failing.checks().stream()
            .map(c -> new DrillCheck(c.layer(), c.expected(), c.seen(), true))
            .toList();
    StepResult edited =
        new StepResult(
            failing.name(),
            failing.attack(),
            failing.command(),
            failing.peerCommand(),
            failing.envKeys(),
            "held",
            forged,
            failing.auditRowIds(),
            failing.observation());
    DrillTranscript transcript = transcript(List.of(edited));
    // Written and read back: the JSON form is the one verify reads.
    Path file = dir.resolve("drill.json");
    transcript.write(file);
    DrillTranscript read = DrillTranscript.read(file);
    assertThat(read.steps().getFirst().observation()).isEqualTo(failing.observation());
    assertThat(DrillVerifier.judgementProblems(read))
        .anySatisfy(p -> assertThat(p).contains("direct-connect-without-proxy"));
    assertThat(Files.readString(dir.resolve("drill.json"))).contains("\"run_id\"");
  }

  private static DrillTranscript transcript(List<StepResult> results) {
    Leftovers leftovers = DrillEnd.leftoversOf(Map.of(RUN, "exited"), List.of());
    Chain chain = new Chain("held", true, 100, List.of(), 100, "h100");
    return new DrillTranscript(
        DrillTranscript.FORMAT,
        "d1",
        "2026-11-30T00:00:00Z",
        "2026-11-30T00:01:00Z",
        DrillTranscript.verdictOf(results, leftovers, chain),
        new Host("h", "http://127.0.0.1:1"),
        new Versions("cli", "0.1.0", "docker", "runsc", "gvisor", "probe"),
        new Configuration(1, List.of(), 30, json("{\"pids\":256}")),
        SETUP,
        results,
        leftovers,
        chain);
  }

  private static JsonNode json(String text) {
    try {
      return JSON.readTree(text);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }
}
