package dev.agentsandbox.policy.event;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.agentsandbox.policy.net.Reason;
import java.time.Instant;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The vocabulary as a named table: one row per kind of event, each written and read back through
 * JSON (as the store and the API carry it) to the same event, under its one row type; and the ways
 * a row of a known type fails to read.
 */
class RunEventTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Instant AT = Instant.parse("2026-12-01T10:00:00.123456789Z");
  private static final Instant LATER = Instant.parse("2026-12-01T11:00:00Z");

  static Stream<Arguments> events() {
    return Stream.of(
        Arguments.of(
            "a one-shot launch",
            new Launched(
                "docker",
                "runsc",
                "gvisor",
                "agent-sandbox/workload:latest",
                List.of("make", "test"),
                List.of("API_KEY"),
                List.of("api.vendor.com"),
                60,
                new Launched.Resources(1.5, 256, 128),
                false,
                LATER,
                false,
                Optional.empty(),
                Optional.empty())),
        Arguments.of(
            "a warm session launch",
            new Launched(
                "docker",
                "runc",
                "container",
                "img",
                List.of(),
                List.of(),
                List.of(),
                600,
                new Launched.Resources(1.0, 512, 256),
                true,
                LATER,
                true,
                Optional.of(AT),
                Optional.of(300L))),
        Arguments.of(
            "a refusal",
            new Refused(
                "env_refused",
                "running agent helper: the environment is refused",
                List.of("env.HTTPS_PROXY: proxy settings are the sandbox's own"),
                List.of("HTTPS_PROXY"),
                List.of("ok"),
                List.of(),
                List.of())),
        Arguments.of(
            "a session's refusal, no command",
            new Refused(
                "invalid_request",
                "opening a session of agent helper: idle_seconds 61 is over its ttl_seconds 60",
                List.of("idle_seconds: over the ttl"),
                List.of(),
                List.of(),
                List.of(),
                List.of(),
                true)),
        Arguments.of(
            "a refusal of a token limited to other agents",
            new Refused(
                "agent_not_listed",
                "running agent bravo: the agent has no sandbox configuration",
                List.of(),
                List.of(),
                List.of("ok"),
                List.of(),
                List.of("alpha", "charlie"))),
        Arguments.of(
            "a session's refusal of a token limited to other agents",
            new Refused(
                "agent_not_listed",
                "opening a session of agent bravo: the agent has no sandbox configuration",
                List.of(),
                List.of(),
                List.of(),
                List.of(),
                List.of("alpha"),
                true)),
        Arguments.of(
            "a refusal after minting",
            new Refused(
                "credential_refused",
                "m",
                List.of("m"),
                List.of(),
                List.of("ok"),
                List.of(
                    new Revocation("self", "run-token", Revocation.Outcome.REVOKED, LATER, none()),
                    new Revocation(
                        "aws",
                        "command",
                        Revocation.Outcome.EXPIRES,
                        LATER,
                        Optional.of("no revoke command is registered"))),
                List.of())),
        Arguments.of(
            "credentials issued",
            new CredentialsIssued(
                List.of(
                    new CredentialsIssued.Credential(
                        "gateway",
                        "jwt",
                        Optional.of("llm-gateway"),
                        none(),
                        Optional.of("GATEWAY_TOKEN"),
                        LATER),
                    new CredentialsIssued.Credential(
                        "aws", "command", none(), Optional.of("mint"), none(), LATER)))),
        Arguments.of(
            "credentials revoked",
            new CredentialsRevoked(
                CredentialsRevoked.Stage.RECOVERY,
                List.of(
                    new Revocation(
                        "self",
                        "run-token",
                        Revocation.Outcome.FAILED,
                        LATER,
                        Optional.of("the store is unavailable"))))),
        Arguments.of(
            "started", new Started("runsc", "img", Optional.of("sha256:ab"), Optional.of("sb-1"))),
        Arguments.of(
            "an allow",
            new EgressRecorded(
                true,
                AT,
                "172.30.0.2:40000",
                "CONNECT",
                "api.vendor.com",
                443,
                Reason.ALLOWED,
                Optional.of("203.0.113.7"),
                true,
                List.of())),
        Arguments.of(
            "a session's deny, attributed to its steps",
            new EgressRecorded(
                false,
                AT,
                "c",
                "CONNECT",
                "pypi.org",
                443,
                Reason.NOT_ALLOWED,
                none(),
                false,
                List.of(2, 3))),
        Arguments.of(
            "a deny without an address",
            new EgressRecorded(
                false,
                AT,
                "c",
                "GET",
                "evil.example",
                80,
                Reason.NOT_ALLOWED,
                none(),
                false,
                List.of())),
        Arguments.of(
            "counted denials",
            new EgressDenialsCounted(
                7,
                AT,
                LATER,
                Map.of(Reason.NOT_ALLOWED, 5L, Reason.IP_LITERAL, 2L),
                Map.of("a.example", 4L, "10.0.0.1", 2L),
                1)),
        Arguments.of("a kill", new KillRequested("admin")),
        Arguments.of("a timeout", new TimedOut(60, "killed at the deadline")),
        Arguments.of("a failure", new Failed(Failed.Stage.RECOVERY, "the control plane stopped")),
        Arguments.of("a runtime mismatch", new RuntimeMismatched("k8s", "runsc", "no gVisor")),
        Arguments.of("a dead proxy", new ProxyDied("docker", "the proxy exited with status 137")),
        Arguments.of(
            "artifacts kept",
            new ArtifactsCollected(
                "folder /data/artifacts",
                11,
                List.of(new ArtifactsCollected.File("result.json", 11, "ab12")),
                List.of(new ArtifactsCollected.Dropped("secrets", "symlink")),
                1)),
        Arguments.of("no artifacts", new ArtifactsNotCollected("the sandbox was never launched")),
        Arguments.of("artifacts expired", new ArtifactsExpired("folder /a", AT, 86400, 3, 1024)),
        Arguments.of(
            "a teardown with totals",
            new TornDown(
                "exit",
                Optional.of(0),
                "docker",
                "runc",
                false,
                none(),
                Optional.of("deleting failed (the reaper removes what is left)"),
                6,
                5,
                Optional.of(new TornDown.EgressTotals(5000, 4400, 0)))),
        Arguments.of(
            "a teardown of a failed launch",
            new TornDown(
                "error",
                Optional.empty(),
                "docker",
                "runc",
                false,
                Optional.of("the launch failed; the backend removed what it had created"),
                none(),
                0,
                0,
                Optional.empty())),
        Arguments.of("a reaper's teardown", new Reaped("docker")),
        Arguments.of(
            "a step starting",
            new StepStarted(
                3, List.of("pytest", "-q"), "/workspace/app", List.of("X"), 0, false, 600)),
        Arguments.of(
            "a step ended",
            new StepEnded(
                3,
                List.of("pytest"),
                "/workspace",
                "exit",
                Optional.of(1),
                2317,
                4211,
                0,
                1,
                Optional.empty())),
        Arguments.of(
            "a step killed, no exit status",
            new StepEnded(
                4,
                List.of("sleep"),
                "/workspace",
                "killed",
                Optional.empty(),
                9,
                0,
                0,
                0,
                Optional.of("the client went away before the result (the step went on)"))),
        Arguments.of(
            "a file put",
            new FilesTransferred(
                FilesTransferred.Op.PUT,
                "/workspace/a.txt",
                FilesTransferred.Kind.FILE,
                Optional.of(12L),
                Optional.of("ab"),
                none(),
                Optional.of(12L),
                none(),
                none(),
                none())),
        Arguments.of(
            "a folder got as a tar, a link left out",
            new FilesTransferred(
                FilesTransferred.Op.GET,
                "/workspace/app",
                FilesTransferred.Kind.FOLDER,
                Optional.of(10240L),
                Optional.of("cd"),
                Optional.of(2L),
                none(),
                Optional.of(1L),
                none(),
                none())),
        Arguments.of(
            "a refused get",
            new FilesTransferred(
                FilesTransferred.Op.GET,
                "/workspace/link",
                FilesTransferred.Kind.FILE,
                Optional.empty(),
                none(),
                none(),
                none(),
                none(),
                Optional.of("path_refused"),
                Optional.of("symlink"))),
        Arguments.of("a step kill", new StepKillRequested(2, "admin")),
        Arguments.of(
            "a step refused",
            new StepRefused("stdin_too_large", "stdin is 17 bytes", List.of("cat"), List.of("X"))),
        Arguments.of("a session closed", new SessionClosed("admin", 1)),
        Arguments.of(
            "a session idled out",
            new SessionIdled(300, Instant.parse("2026-11-29T15:33:58.462Z"))));
  }

  private static <T> Optional<T> none() {
    return Optional.empty();
  }

  /** The tree as the store and the API carry it: JSON text parsed back into plain values. */
  private static Object throughJson(Map<String, Object> tree) throws Exception {
    return JSON.readValue(JSON.writeValueAsString(tree), Object.class);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("events")
  void readsBackAsTheSameEventUnderItsOneType(String name, RunEvent event) throws Exception {
    Object stored = throughJson(event.toTree());
    assertThat(RunEvent.read(event.type().wireName(), stored)).as(name).contains(event);
    assertThat(throughJson(RunEvent.read(event.type().wireName(), stored).get().toTree()))
        .as("written again, the same data")
        .isEqualTo(stored);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("events")
  void theStoresLabelsAndFieldsOfANewerWriterAreIgnored(String name, RunEvent event)
      throws Exception {
    Map<String, Object> tree = new LinkedHashMap<>(event.toTree());
    tree.put("labels", Map.of("owner", "alice"));
    tree.put("a_field_of_a_newer_version", 1);
    assertThat(RunEvent.read(event.type().wireName(), throughJson(tree))).as(name).contains(event);
  }

  @Test
  void everyRowTypeHasAnEventInTheTable() {
    Set<EventType> covered =
        events()
            .map(a -> ((RunEvent) a.get()[1]).type())
            .collect(Collectors.toCollection(() -> EnumSet.noneOf(EventType.class)));
    assertThat(covered).containsExactlyInAnyOrder(EventType.values());
  }

  @Test
  void rowsThatAreNotRunEventsReadAsNothing() {
    assertThat(RunEvent.read("agent_sandbox.config.update", Map.of("config", "x"))).isEmpty();
    assertThat(RunEvent.read("agent_sandbox.token.create", Map.of())).isEmpty();
  }

  static Stream<Arguments> unreadable() {
    return Stream.of(
        Arguments.of(
            "a deny without its host",
            "agent_sandbox.egress.deny",
            "host is missing",
            Map.of(
                "time",
                AT.toString(),
                "client",
                "c",
                "method",
                "GET",
                "port",
                80,
                "reason",
                "not-allowed",
                "first",
                false)),
        Arguments.of(
            "a deny with an allow's reason",
            "agent_sandbox.egress.deny",
            "reason does not go with",
            Map.of(
                "time",
                AT.toString(),
                "client",
                "c",
                "method",
                "GET",
                "host",
                "h",
                "port",
                80,
                "reason",
                "allowed",
                "first",
                false)),
        Arguments.of(
            "a reason no proxy gives",
            "agent_sandbox.egress.deny",
            "reason names no known value: made-up",
            Map.of(
                "time",
                AT.toString(),
                "client",
                "c",
                "method",
                "GET",
                "host",
                "h",
                "port",
                80,
                "reason",
                "made-up",
                "first",
                false)),
        Arguments.of(
            "a port that is text",
            "agent_sandbox.egress.allow",
            "port is not a whole number",
            Map.of(
                "time",
                AT.toString(),
                "client",
                "c",
                "method",
                "GET",
                "host",
                "h",
                "port",
                "80",
                "reason",
                "allowed",
                "first",
                true)),
        Arguments.of(
            "a teardown without removed",
            "agent_sandbox.teardown",
            "removed is missing",
            Map.of(
                "end",
                "exit",
                "backend",
                "docker",
                "runtime",
                "runc",
                "output_bytes",
                0,
                "egress_decisions",
                0)),
        Arguments.of(
            "a failure at an unknown stage",
            "agent_sandbox.failure",
            "stage names no known value: lunch",
            Map.of("stage", "lunch", "message", "m")),
        Arguments.of(
            "counts that do not add up",
            "agent_sandbox.egress.deny.counted",
            "must be 3",
            Map.of(
                "count",
                3,
                "first_at",
                AT.toString(),
                "last_at",
                AT.toString(),
                "reasons",
                Map.of("not-allowed", 2),
                "hosts",
                Map.of("h", 3),
                "other_hosts",
                0)),
        Arguments.of(
            "data that is not an object",
            "agent_sandbox.kill",
            "the data is not an object",
            List.of("admin")));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("unreadable")
  void aKnownRowThatDoesNotReadSaysWhy(String name, String type, String problem, Object data) {
    assertThatThrownBy(() -> RunEvent.read(type, data))
        .as(name)
        .isInstanceOf(InvalidEventException.class)
        .hasMessageContaining(problem);
  }

  @Test
  void aDecisionLineIsEveryFieldInItsFixedOrder() throws Exception {
    DecisionRecord deny =
        new DecisionRecord(
            AT,
            "r1",
            "172.30.0.2:4000",
            "CONNECT",
            "evil.example",
            443,
            false,
            Reason.NOT_ALLOWED,
            null,
            0,
            0,
            3,
            false,
            null,
            "host not on the allow-list");
    assertThat(JSON.writeValueAsString(deny.toTree()))
        .isEqualTo(
            "{\"time\":\"2026-12-01T10:00:00.123456789Z\",\"run_id\":\"r1\","
                + "\"client\":\"172.30.0.2:4000\",\"method\":\"CONNECT\","
                + "\"host\":\"evil.example\",\"port\":443,\"decision\":\"deny\","
                + "\"reason\":\"not-allowed\",\"address\":null,\"bytes_up\":0,\"bytes_down\":0,"
                + "\"duration_ms\":3,\"first\":false,\"end\":null,"
                + "\"detail\":\"host not on the allow-list\"}");
    assertThat(DecisionRecord.read(throughJson(deny.toTree()))).isEqualTo(deny);
    EgressRecorded recorded = EgressRecorded.of(deny);
    assertThat(recorded.type()).isEqualTo(EventType.EGRESS_DENY);
    assertThat(EgressRecorded.readListed(throughJson(deny.toTree()))).isEqualTo(recorded);
    assertThat(EgressRecorded.readListed(throughJson(recorded.listedTree()))).isEqualTo(recorded);
  }

  @Test
  void aDecisionLineMissingAFieldIsRefusedNamingIt() {
    Map<String, Object> line = new LinkedHashMap<>();
    line.put("decision", "deny");
    line.put("host", "evil.example");
    line.put("reason", "not-allowed");
    assertThatThrownBy(() -> DecisionRecord.read(line))
        .isInstanceOf(InvalidEventException.class)
        .hasMessageContaining("time is missing")
        .hasMessageContaining("port is missing");
    line.put("decision", "maybe");
    assertThatThrownBy(() -> DecisionRecord.read(line))
        .hasMessageContaining("decision is neither allow nor deny");
  }
}
