package dev.agentsandbox.runs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.agentsandbox.backend.BackendSelector;
import dev.agentsandbox.backend.Isolation;
import dev.agentsandbox.backend.RunCredential;
import dev.agentsandbox.credentials.CommandIssuer;
import dev.agentsandbox.credentials.CommandRevoker;
import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.config.AgentGrant;
import dev.agentsandbox.policy.config.AgentSettings;
import dev.agentsandbox.policy.config.Backend;
import dev.agentsandbox.policy.config.CredentialSpec;
import dev.agentsandbox.policy.config.EgressPolicy;
import dev.agentsandbox.policy.config.OutputLimits;
import dev.agentsandbox.policy.config.Resources;
import dev.agentsandbox.policy.config.SandboxConfig;
import dev.agentsandbox.policy.event.CredentialsRevoked;
import dev.agentsandbox.policy.event.Refused;
import dev.agentsandbox.policy.event.Revocation;
import dev.agentsandbox.runs.InMemoryBackend.Script;
import dev.agentsandbox.runs.audit.RecordedEvent;
import dev.agentsandbox.store.AuditQuery;
import dev.agentsandbox.store.Store;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Credentials are revoked on every path, and what could not be revoked is in the run's rows: after
 * a restart, when revoking fails (and a later pass revokes it), and when a later minting step fails
 * after some were minted. Real SQLite, real credential commands, a backend that runs nothing.
 */
class RunRevocationTest {
  private static final String AGENT = "helper";
  private static final String ACTOR = "admin";
  private static final Duration WAIT = Duration.ofSeconds(20);

  @TempDir Path temp;
  private final ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor();
  private Store store;
  private InMemoryBackend backend;

  @BeforeEach
  void open() {
    store = Store.open("jdbc:sqlite:" + temp.resolve("store.db"));
    backend =
        new InMemoryBackend("docker", Isolation.CONTAINER, Clock.systemUTC())
            .script("hangs", Script.runsUntilStopped());
  }

  @AfterEach
  void close() {
    executor.shutdownNow();
    store.close();
  }

  private RunService service(
      Map<String, CredentialSpec> credentials,
      Map<String, Path> commands,
      Map<String, Path> revokers) {
    TreeMap<String, AgentSettings> agents = new TreeMap<>();
    agents.put(
        AGENT,
        new AgentSettings(
            AllowList.parse(List.of("api.vendor.com")),
            AgentSettings.DEFAULT_IMAGE,
            AGENT,
            60,
            Resources.DEFAULT,
            new TreeMap<>(credentials),
            new OutputLimits(1 << 20, 10),
            new TreeMap<>()));
    SandboxConfig config = new SandboxConfig(true, Backend.AUTO, false, agents);
    ConfigSource configs =
        new ConfigSource() {
          @Override
          public SandboxConfig sandbox() {
            return config;
          }

          @Override
          public EgressPolicy egress() {
            return EgressPolicy.DEFAULT;
          }
        };
    Map<String, CommandIssuer> issuers = new TreeMap<>();
    commands.forEach(
        (name, path) ->
            issuers.put(
                name,
                new CommandIssuer(
                    List.of(path.toString()), Duration.ofSeconds(10), Clock.systemUTC())));
    Map<String, CommandRevoker> revoke = new TreeMap<>();
    revokers.forEach(
        (name, path) ->
            revoke.put(name, new CommandRevoker(List.of(path.toString()), Duration.ofSeconds(10))));
    return new RunService(
        configs,
        new BackendSelector(List.of(backend)),
        store,
        OperatorEgress.NONE,
        new RunSettings("cp-1", RunSettings.DEFAULT_TAIL_BYTES, 100, 4, 16),
        Clock.systemUTC(),
        executor,
        new ObjectMapper(),
        new RunContractServices.Config(Optional.empty(), Optional.empty(), issuers, revoke)
            .services(store));
  }

  private static CredentialSpec runToken() {
    return new CredentialSpec(
        "self",
        CredentialSpec.Source.RUN_TOKEN,
        Optional.empty(),
        Optional.empty(),
        Optional.empty());
  }

  private static CredentialSpec command(String name, String command) {
    return new CredentialSpec(
        name,
        CredentialSpec.Source.COMMAND,
        Optional.empty(),
        Optional.of(command),
        Optional.empty());
  }

  private Path script(String name, String body) throws Exception {
    Path path = temp.resolve(name);
    Files.writeString(path, "#!/bin/sh\n" + body);
    Files.setPosixFilePermissions(path, PosixFilePermissions.fromString("rwx------"));
    return path;
  }

  private String value(String runId, String credential) {
    return backend.launched(runId).credentials().stream()
        .filter(c -> c.name().equals(credential))
        .map(RunCredential::value)
        .findFirst()
        .orElseThrow();
  }

  private List<CredentialsRevoked> revocations(String runId) {
    return store
        .audit()
        .query(
            new AuditQuery(
                dev.agentsandbox.policy.event.EventType.CREDENTIALS_REVOKE.wireName(),
                null,
                runId,
                null,
                null,
                100))
        .stream()
        .map(RecordedEvent::of)
        .flatMap(r -> r.as(CredentialsRevoked.class).stream())
        .toList();
  }

  private void sql(String statement) throws Exception {
    try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + temp.resolve("store.db"));
        Statement s = c.createStatement()) {
      s.execute("PRAGMA busy_timeout = 10000");
      s.execute(statement);
    }
  }

  @Test
  void aRestartRevokesTheRunTokenOfARunItMarksFailedAndSaysWhatItCouldNot() throws Exception {
    Path mint =
        script(
            "mint.sh",
            "printf '{\"value\": \"cmd-%s\", \"expires_at\": \"%s\"}' \"$AGENT_SANDBOX_RUN_ID\""
                + " \"$AGENT_SANDBOX_DEADLINE\"\n");
    Map<String, CredentialSpec> creds = Map.of("self", runToken(), "aws", command("aws", "mint"));
    RunService before = service(creds, Map.of("mint", mint), Map.of());
    String runId =
        before.start(ACTOR, AgentGrant.EVERY, new RunRequest(AGENT, List.of("hangs"), Map.of()));
    assertThat(backend.awaitStarted(runId, WAIT)).isTrue();
    String token = value(runId, "self");
    assertThat(store.tokens().authenticate(token))
        .as("the run token works while it runs")
        .isPresent();

    // The control plane dies with the run live; its next life (same instance id) recovers it.
    RunService after = service(creds, Map.of("mint", mint), Map.of());
    assertThat(after.recover()).isEqualTo(1);

    assertThat(store.tokens().authenticate(token))
        .as("the recovered run's token no longer works")
        .isEmpty();
    CredentialsRevoked revoked = revocations(runId).getLast();
    assertThat(revoked.stage()).isEqualTo(CredentialsRevoked.Stage.RECOVERY);
    assertThat(revoked.credentials())
        .extracting(Revocation::name, Revocation::outcome)
        .containsExactlyInAnyOrder(
            org.assertj.core.groups.Tuple.tuple("self", Revocation.Outcome.REVOKED),
            org.assertj.core.groups.Tuple.tuple("aws", Revocation.Outcome.EXPIRES));
    assertThat(revoked.live().getFirst().problem()).get().asString().contains("value went with it");
    before.kill(ACTOR, runId);
  }

  @Test
  void aRevocationThatFailsIsRecordedAndTheReaperPassRevokesTheTokenLater() throws Exception {
    RunService service = service(Map.of("self", runToken()), Map.of(), Map.of());
    String runId =
        service.start(ACTOR, AgentGrant.EVERY, new RunRequest(AGENT, List.of("hangs"), Map.of()));
    assertThat(backend.awaitStarted(runId, WAIT)).isTrue();
    String token = value(runId, "self");

    // The token table goes away under the run: revoking its token fails when the workload stops.
    sql("ALTER TABLE api_token RENAME TO api_token_away");
    service.kill(ACTOR, runId);
    await().atMost(WAIT).until(() -> !revocations(runId).isEmpty());
    CredentialsRevoked atStop = revocations(runId).getFirst();
    assertThat(atStop.stage()).isEqualTo(CredentialsRevoked.Stage.RUN);
    assertThat(atStop.live())
        .singleElement()
        .satisfies(
            r -> {
              assertThat(r.outcome()).isEqualTo(Revocation.Outcome.FAILED);
              assertThat(r.problem()).get().asString().contains("revoke token run-" + runId);
            });
    sql("ALTER TABLE api_token_away RENAME TO api_token");
    assertThat(store.tokens().authenticate(token)).as("left valid by the failure").isPresent();
    await().atMost(WAIT).until(() -> !service.isLive(runId));

    assertThat(service.sweepRunTokens()).isEqualTo(1);

    assertThat(store.tokens().authenticate(token)).isEmpty();
    assertThat(revocations(runId).getLast().stage()).isEqualTo(CredentialsRevoked.Stage.SWEEP);
    assertThat(service.sweepRunTokens()).as("nothing left to sweep").isZero();
  }

  @Test
  void aCommandCredentialMintedBeforeALaterFailureIsRevokedByItsRevokeCommand() throws Exception {
    Path mint =
        script(
            "mint.sh",
            "printf '{\"value\": \"cmd-secret-%s\", \"expires_at\": \"%s\"}'"
                + " \"$AGENT_SANDBOX_CREDENTIAL\" \"$AGENT_SANDBOX_DEADLINE\"\n");
    Path fails = script("fail.sh", "exit 2\n");
    Path seen = temp.resolve("revoked.txt");
    Path revoke = script("revoke.sh", "cat >> " + seen + "; echo >> " + seen + "\n");
    // Minted in name order: aws (a command), self (the run token), then zz, which fails.
    Map<String, CredentialSpec> creds =
        Map.of("aws", command("aws", "mint"), "self", runToken(), "zz", command("zz", "fail"));
    RunService service =
        service(creds, Map.of("mint", mint, "fail", fails), Map.of("mint", revoke));

    assertThatThrownBy(
            () ->
                service.start(
                    ACTOR, AgentGrant.EVERY, new RunRequest(AGENT, List.of("hangs"), Map.of())))
        .isInstanceOfSatisfying(
            RunRefusedException.class,
            e -> assertThat(e.refusal()).isEqualTo(Refusal.CREDENTIAL_REFUSED));

    assertThat(Files.readString(seen))
        .as("the revoke command got the minted value on its standard input")
        .isEqualTo("cmd-secret-aws\n");
    Refused refused = refusedRow();
    assertThat(refused.revocations())
        .extracting(Revocation::name, Revocation::outcome)
        .containsExactly(
            org.assertj.core.groups.Tuple.tuple("aws", Revocation.Outcome.REVOKED),
            org.assertj.core.groups.Tuple.tuple("self", Revocation.Outcome.REVOKED));
    assertThat(store.tokens().list()).allSatisfy(t -> assertThat(t.revokedAt()).isNotNull());
  }

  @Test
  void withoutARevokeCommandTheRefusalSaysTheCommandCredentialLivesUntilItsExpiry()
      throws Exception {
    Path mint =
        script(
            "mint.sh",
            "printf '{\"value\": \"cmd-secret\", \"expires_at\": \"%s\"}' \"$AGENT_SANDBOX_DEADLINE\"\n");
    Path fails = script("fail.sh", "exit 2\n");
    RunService service =
        service(
            Map.of("aws", command("aws", "mint"), "zz", command("zz", "fail")),
            Map.of("mint", mint, "fail", fails),
            Map.of());

    assertThatThrownBy(
            () ->
                service.start(
                    ACTOR, AgentGrant.EVERY, new RunRequest(AGENT, List.of("hangs"), Map.of())))
        .isInstanceOf(RunRefusedException.class);

    assertThat(refusedRow().revocations())
        .singleElement()
        .satisfies(
            r -> {
              assertThat(r.outcome()).isEqualTo(Revocation.Outcome.EXPIRES);
              assertThat(r.problem())
                  .get()
                  .asString()
                  .contains("no revoke command is registered for mint");
            });
  }

  private Refused refusedRow() {
    return store
        .audit()
        .query(
            new AuditQuery(
                dev.agentsandbox.policy.event.EventType.REFUSED.wireName(),
                null,
                null,
                null,
                null,
                10))
        .stream()
        .map(RecordedEvent::of)
        .flatMap(r -> r.as(Refused.class).stream())
        .reduce((a, b) -> b)
        .orElseThrow();
  }
}
