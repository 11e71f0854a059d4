package dev.agentsandbox.runs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.nimbusds.jose.jwk.Curve;
import com.nimbusds.jose.jwk.JWKSet;
import com.nimbusds.jose.jwk.gen.ECKeyGenerator;
import com.nimbusds.jwt.SignedJWT;
import dev.agentsandbox.artifacts.FolderArtifactStore;
import dev.agentsandbox.backend.BackendSelector;
import dev.agentsandbox.backend.Isolation;
import dev.agentsandbox.backend.RunCredential;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.credentials.CommandIssuer;
import dev.agentsandbox.credentials.JwtIssuer;
import dev.agentsandbox.credentials.JwtKeyRing;
import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.config.AgentGrant;
import dev.agentsandbox.policy.config.AgentSettings;
import dev.agentsandbox.policy.config.Backend;
import dev.agentsandbox.policy.config.CredentialSpec;
import dev.agentsandbox.policy.config.EgressPolicy;
import dev.agentsandbox.policy.config.InternalDestination;
import dev.agentsandbox.policy.config.OutputLimits;
import dev.agentsandbox.policy.config.Resources;
import dev.agentsandbox.policy.config.SandboxConfig;
import dev.agentsandbox.policy.event.EventType;
import dev.agentsandbox.runs.InMemoryBackend.Script;
import dev.agentsandbox.store.AuditQuery;
import dev.agentsandbox.store.AuditRow;
import dev.agentsandbox.store.Store;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The run contract on the in-memory backend: credentials minted per run and dead after it, outputs
 * kept for review, labels on every audit row. No Docker: the backend only records what it got.
 */
class RunContractTest {
  private static final String AGENT = "helper";
  private static final String ACTOR = "admin";

  @TempDir Path temp;
  private final ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor();
  private final ObjectMapper json = new ObjectMapper();
  private Store store;
  private InMemoryBackend backend;
  private JwtKeyRing keys;

  @BeforeEach
  void open() throws Exception {
    store = Store.open("jdbc:sqlite:" + temp.resolve("store.db"));
    backend =
        new InMemoryBackend("docker", Isolation.CONTAINER, Clock.systemUTC())
            .script("ok", Script.exits(0, "done\n"))
            .script("leaks", Script.exits(0, ""))
            .script("hangs", Script.runsUntilStopped())
            .outputs("ok", tar());
    Path keyFile = temp.resolve("jwt.json");
    Files.writeString(
        keyFile,
        new JWKSet(new ECKeyGenerator(Curve.P_256).keyID("k1").generate()).toString(false));
    Files.setPosixFilePermissions(keyFile, PosixFilePermissions.fromString("rw-------"));
    keys = new JwtKeyRing(keyFile, "k1");
  }

  @AfterEach
  void close() {
    executor.shutdownNow();
    store.close();
  }

  private static byte[] tar() throws Exception {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (TarArchiveOutputStream t = new TarArchiveOutputStream(bytes)) {
      t.putArchiveEntry(new TarArchiveEntry("out/"));
      t.closeArchiveEntry();
      byte[] result = "{\"ok\":true}".getBytes(StandardCharsets.UTF_8);
      TarArchiveEntry file = new TarArchiveEntry("out/result.json");
      file.setSize(result.length);
      t.putArchiveEntry(file);
      t.write(result);
      t.closeArchiveEntry();
      TarArchiveEntry link = new TarArchiveEntry("out/secrets", TarArchiveEntry.LF_SYMLINK);
      link.setLinkName("/run/agent-sandbox/credentials/gateway");
      t.putArchiveEntry(link);
      t.closeArchiveEntry();
    }
    return bytes.toByteArray();
  }

  private RunService service(Map<String, CredentialSpec> credentials, Path commandScript) {
    return service(credentials, commandScript, Map.of());
  }

  private RunService service(
      Map<String, CredentialSpec> credentials,
      Path commandScript,
      Map<String, InternalDestination> internal) {
    TreeMap<String, CredentialSpec> creds = new TreeMap<>(credentials);
    TreeMap<String, AgentSettings> agents = new TreeMap<>();
    agents.put(
        AGENT,
        new AgentSettings(
            AllowList.parse(List.of("api.vendor.com")),
            AgentSettings.DEFAULT_IMAGE,
            AGENT,
            60,
            Resources.DEFAULT,
            creds,
            new OutputLimits(1 << 20, 10),
            new TreeMap<>(internal)));
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
    Map<String, CommandIssuer> commands =
        commandScript == null
            ? Map.of()
            : Map.of(
                "mint",
                new CommandIssuer(
                    List.of(commandScript.toString()), Duration.ofSeconds(10), Clock.systemUTC()));
    RunContractServices contract =
        new RunContractServices(
            new CredentialMinter(
                store.tokens(),
                Optional.of(new JwtIssuer(keys, "test-cp", Clock.systemUTC())),
                commands),
            Optional.of(
                RunContractServices.Artifacts.of(
                    new FolderArtifactStore(temp.resolve("artifacts")), temp.resolve("spool"))));
    return new RunService(
        configs,
        new BackendSelector(List.of(backend)),
        store,
        OperatorEgress.NONE,
        new RunSettings("cp-1", RunSettings.DEFAULT_TAIL_BYTES, 100, 4, 16),
        Clock.systemUTC(),
        executor,
        json,
        contract);
  }

  private static CredentialSpec spec(String name, CredentialSpec.Source source, String extra) {
    return new CredentialSpec(
        name,
        source,
        source == CredentialSpec.Source.JWT ? Optional.of(extra) : Optional.empty(),
        source == CredentialSpec.Source.COMMAND ? Optional.of(extra) : Optional.empty(),
        Optional.empty());
  }

  private List<AuditRow> rows(String runId) {
    return store.audit().query(new AuditQuery(null, null, runId, null, null, 100));
  }

  @Test
  void aRunGetsItsCredentialsAndTheyDieWithIt() throws Exception {
    RunService service =
        service(
            Map.of(
                "self", spec("self", CredentialSpec.Source.RUN_TOKEN, null),
                "gateway", spec("gateway", CredentialSpec.Source.JWT, "llm-gateway")),
            null);
    String runId =
        service.start(
            ACTOR,
            AgentGrant.EVERY,
            new RunRequest(AGENT, List.of("hangs"), Map.of(), Map.of("owner", "alice")));
    assertThat(backend.awaitStarted(runId, Duration.ofSeconds(20))).isTrue();
    RunSpec launched = backend.launched(runId);
    Map<String, RunCredential> byName =
        launched.credentials().stream()
            .collect(java.util.stream.Collectors.toMap(RunCredential::name, c -> c));
    assertThat(byName).containsOnlyKeys("self", "gateway");

    // while the run lives, its token works and holds only the run's own scope
    var token = store.tokens().authenticate(byName.get("self").value());
    assertThat(token).isPresent();
    assertThat(token.get().scopes()).containsExactly(CredentialMinter.runScope(runId));
    SignedJWT jwt = SignedJWT.parse(byName.get("gateway").value());
    assertThat(jwt.getJWTClaimsSet().getStringClaim("run_id")).isEqualTo(runId);
    assertThat(jwt.getJWTClaimsSet().getAudience()).containsExactly("llm-gateway");
    assertThat(jwt.getJWTClaimsSet().getExpirationTime().toInstant())
        .isBeforeOrEqualTo(byName.get("gateway").expiresAt());
    assertThat(launched.labels()).containsEntry("owner", "alice");

    service.kill(ACTOR, runId);
    org.awaitility.Awaitility.await()
        .atMost(Duration.ofSeconds(20))
        .until(() -> service.liveCount() == 0);

    // after the run, the token is revoked
    assertThat(store.tokens().authenticate(byName.get("self").value())).isEmpty();
    // the audit rows name the credentials but never hold their values; every row has the labels
    List<AuditRow> rows = rows(runId);
    assertThat(rows).extracting(AuditRow::type).contains(EventType.CREDENTIALS_ISSUE.wireName());
    String all = rows.toString() + store.runs().find(runId).orElseThrow();
    for (RunCredential c : launched.credentials()) {
      assertThat(all).doesNotContain(c.value());
    }
    assertThat(rows)
        .allSatisfy(
            r -> assertThat(r.data().get("labels").get("owner").asText()).isEqualTo("alice"));
    AuditRow issue =
        rows.stream()
            .filter(r -> r.type().equals(EventType.CREDENTIALS_ISSUE.wireName()))
            .findFirst()
            .get();
    assertThat(issue.data().get("credentials").findValuesAsText("name"))
        .containsExactly("gateway", "self");
    assertThat(
            store.audit().query(AuditQuery.all(100).withLabels(Map.of("owner", "alice"))).stream()
                .map(AuditRow::runId)
                .distinct())
        .containsExactly(runId);
  }

  @Test
  void outputsAreKeptAndTheHostileOnesNamedAsDropped() {
    RunService service = service(Map.of(), null);
    String runId =
        service.start(ACTOR, AgentGrant.EVERY, new RunRequest(AGENT, List.of("ok"), Map.of()));
    org.awaitility.Awaitility.await()
        .atMost(Duration.ofSeconds(20))
        .until(() -> service.liveCount() == 0);
    AuditRow artifacts =
        rows(runId).stream()
            .filter(r -> r.type().equals(EventType.ARTIFACTS.wireName()))
            .findFirst()
            .orElseThrow();
    assertThat(artifacts.data().get("collected").asBoolean()).isTrue();
    assertThat(artifacts.data().get("files").get(0).get("path").asText()).isEqualTo("result.json");
    assertThat(artifacts.data().get("files").get(0).get("sha256").asText())
        .isEqualTo("4062edaf750fb8074e7e83e0c9028c94e32468a8b6f1614774328ef045150f93");
    assertThat(artifacts.data().get("dropped").get(0).get("reason").asText()).isEqualTo("symlink");
    assertThat(new FolderArtifactStore(temp.resolve("artifacts")).list(runId)).hasSize(1);
  }

  @Test
  void retentionDeletesTheArtifactsOfRunsEndedLongerAgoAndNothingElse() throws Exception {
    RunService service = service(Map.of(), null);
    String ended =
        service.start(ACTOR, AgentGrant.EVERY, new RunRequest(AGENT, List.of("ok"), Map.of()));
    org.awaitility.Awaitility.await()
        .atMost(Duration.ofSeconds(20))
        .until(() -> service.liveCount() == 0);
    String live =
        service.start(ACTOR, AgentGrant.EVERY, new RunRequest(AGENT, List.of("hangs"), Map.of()));
    FolderArtifactStore artifacts = new FolderArtifactStore(temp.resolve("artifacts"));
    Path file = temp.resolve("planted");
    Files.writeString(file, "x");
    String sha = "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881";
    artifacts.put(live, "partial.txt", file, sha);
    artifacts.put("unknownrun", "x.txt", file, sha);
    java.time.Instant later = java.time.Instant.now().plus(Duration.ofDays(8));
    Clock in8Days = Clock.fixed(later, java.time.ZoneOffset.UTC);

    assertThat(
            new ArtifactRetention(
                    artifacts, Duration.ofDays(9), store.runs(), store.audit(), in8Days, json)
                .sweep())
        .as("kept 9 days, ended 8 days ago")
        .isEmpty();
    ArtifactRetention week =
        new ArtifactRetention(
            artifacts, Duration.ofDays(7), store.runs(), store.audit(), in8Days, json);
    assertThat(week.sweep()).containsExactly(ended);
    assertThat(artifacts.list(ended)).isEmpty();
    assertThat(artifacts.list(live)).as("a live run's").hasSize(1);
    assertThat(artifacts.list("unknownrun")).as("a run this store does not know").hasSize(1);
    AuditRow expired =
        rows(ended).stream()
            .filter(r -> r.type().equals(EventType.ARTIFACTS_EXPIRED.wireName()))
            .findFirst()
            .orElseThrow();
    assertThat(expired.actor()).isEqualTo("retention");
    assertThat(expired.data().get("files").asInt()).isEqualTo(1);
    assertThat(expired.data().get("bytes").asLong()).isEqualTo(11);
    assertThat(expired.data().get("retention_seconds").asLong()).isEqualTo(7 * 86_400);
    assertThat(week.sweep()).as("nothing twice").isEmpty();
    service.kill(ACTOR, live);
  }

  @Test
  void aBackendThatDoesNotCollectSaysSo() {
    RunService service = service(Map.of(), null);
    String runId =
        service.start(ACTOR, AgentGrant.EVERY, new RunRequest(AGENT, List.of("leaks"), Map.of()));
    org.awaitility.Awaitility.await()
        .atMost(Duration.ofSeconds(20))
        .until(() -> service.liveCount() == 0);
    AuditRow artifacts =
        rows(runId).stream()
            .filter(r -> r.type().equals(EventType.ARTIFACTS.wireName()))
            .findFirst()
            .orElseThrow();
    assertThat(artifacts.data().get("collected").asBoolean()).isFalse();
    assertThat(artifacts.data().get("reason").asText()).contains("does not collect outputs");
  }

  @Test
  void aCommandCredentialOutlivingTheRunRefusesItWithNothingCreated() throws Exception {
    Path script = temp.resolve("mint.sh");
    Files.writeString(
        script,
        "#!/bin/sh\necho '{\"value\":\"long-lived-secret-123\",\"expires_at\":\"2999-01-01T00:00:00Z\"}'\n");
    Files.setPosixFilePermissions(script, PosixFilePermissions.fromString("rwx------"));
    RunService service =
        service(
            Map.of(
                "self", spec("self", CredentialSpec.Source.RUN_TOKEN, null),
                "aws", spec("aws", CredentialSpec.Source.COMMAND, "mint")),
            script);
    assertThatThrownBy(
            () ->
                service.start(
                    ACTOR, AgentGrant.EVERY, new RunRequest(AGENT, List.of("ok"), Map.of())))
        .isInstanceOfSatisfying(
            RunRefusedException.class,
            e -> {
              assertThat(e.refusal()).isEqualTo(Refusal.CREDENTIAL_REFUSED);
              assertThat(e.getMessage()).contains("after the run's deadline");
              assertThat(e.getMessage()).doesNotContain("long-lived-secret-123");
            });
    assertThat(backend.resources()).isEmpty();
    assertThat(store.runs().recent(10)).isEmpty();
    // the run token minted before the command failed was revoked
    assertThat(store.tokens().list()).allSatisfy(t -> assertThat(t.revokedAt()).isNotNull());
    assertThat(service.liveCount()).isZero();
  }

  /**
   * A credential helper that fails and prints the control plane's own Vault token on its standard
   * error: the refusal (the API's answer) and the refused run's audit row, which is permanent, say
   * why it failed without the token.
   */
  @Test
  void aFailingHelpersSecretReachesNeitherTheRefusalNorTheAuditLog() throws Exception {
    String vaultToken = "hvs.CAESIJlSx3Tf7W8Q0qL9v2nB1aXkYzPqRtU4";
    Path script = temp.resolve("mint.sh");
    Files.writeString(
        script,
        "#!/bin/sh\necho 'Error making API request. Code: 403. VAULT_TOKEN="
            + vaultToken
            + " permission denied' >&2\necho 'retrying with token "
            + vaultToken
            + "' >&2\nexit 2\n");
    Files.setPosixFilePermissions(script, PosixFilePermissions.fromString("rwx------"));
    RunService service =
        service(Map.of("aws", spec("aws", CredentialSpec.Source.COMMAND, "mint")), script);
    assertThatThrownBy(
            () ->
                service.start(
                    ACTOR, AgentGrant.EVERY, new RunRequest(AGENT, List.of("ok"), Map.of())))
        .isInstanceOfSatisfying(
            RunRefusedException.class,
            e -> {
              assertThat(e.refusal()).isEqualTo(Refusal.CREDENTIAL_REFUSED);
              assertThat(e.getMessage())
                  .contains("exit status 2", "Code: 403", "VAULT_TOKEN=[REDACTED]")
                  .doesNotContain("CAESIJlSx3Tf7W8Q0qL9v2nB1aXkYzPqRtU4");
              assertThat(String.valueOf(e.problems())).doesNotContain("CAESIJ");
            });
    List<AuditRow> refused =
        store
            .audit()
            .query(new AuditQuery(EventType.REFUSED.wireName(), null, null, null, null, 10));
    assertThat(refused).hasSize(1);
    assertThat(refused.get(0).data().toString())
        .contains("VAULT_TOKEN=[REDACTED]")
        .doesNotContain("CAESIJlSx3Tf7W8Q0qL9v2nB1aXkYzPqRtU4");
  }

  @Test
  void credentialsThisControlPlaneCannotMintRefuseTheRun() {
    RunService service =
        service(Map.of("aws", spec("aws", CredentialSpec.Source.COMMAND, "unregistered")), null);
    assertThatThrownBy(
            () ->
                service.start(
                    ACTOR, AgentGrant.EVERY, new RunRequest(AGENT, List.of("ok"), Map.of())))
        .isInstanceOfSatisfying(
            RunRefusedException.class,
            e -> {
              assertThat(e.refusal()).isEqualTo(Refusal.CREDENTIALS_UNAVAILABLE);
              assertThat(e.getMessage()).contains("no credential command named unregistered");
            });
    assertThat(store.tokens().list()).isEmpty();
  }

  @Test
  void aBackendThatCannotDeliverCredentialsRefusesTheRunAndMintsNothing() {
    backend =
        new InMemoryBackend("docker", Isolation.CONTAINER, Clock.systemUTC()) {
          @Override
          public boolean deliversCredentials() {
            return false;
          }
        }.script("ok", Script.exits(0, ""));
    RunService service =
        service(Map.of("self", spec("self", CredentialSpec.Source.RUN_TOKEN, null)), null);
    assertThatThrownBy(
            () ->
                service.start(
                    ACTOR, AgentGrant.EVERY, new RunRequest(AGENT, List.of("ok"), Map.of())))
        .isInstanceOfSatisfying(
            RunRefusedException.class,
            e -> {
              assertThat(e.refusal()).isEqualTo(Refusal.CREDENTIALS_UNAVAILABLE);
              assertThat(e.getMessage()).contains("cannot deliver credentials");
            });
    assertThat(store.tokens().list()).isEmpty();
    assertThat(backend.resources()).isEmpty();
    // without credentials the same backend runs the agent
    RunService plain = service(Map.of(), null);
    assertThat(plain.start(ACTOR, AgentGrant.EVERY, new RunRequest(AGENT, List.of("ok"), Map.of())))
        .isNotBlank();
  }

  @Test
  void aClusterServiceDestinationIsRefusedOnABackendThatCannotFenceIt() {
    // Only a NetworkPolicy can hold the proxy to a service's pods; on Docker or a microVM the
    // destination would be an unfenced hole, so such a run never starts there.
    InternalDestination gateway =
        InternalDestination.service(
            "gateway",
            new InternalDestination.ClusterService(
                "platform",
                new TreeMap<>(Map.of("app", "llm-gateway")),
                "platform-gateway.platform.svc",
                new TreeSet<>()),
            new TreeSet<>(List.of(4000)));
    RunService service = service(Map.of(), null, Map.of("gateway", gateway));
    assertThatThrownBy(
            () ->
                service.start(
                    ACTOR, AgentGrant.EVERY, new RunRequest(AGENT, List.of("ok"), Map.of())))
        .isInstanceOfSatisfying(
            RunRefusedException.class,
            e -> {
              assertThat(e.refusal()).isEqualTo(Refusal.BACKEND_UNAVAILABLE);
              assertThat(e.getMessage()).contains("gateway").contains("cannot fence");
            });
    assertThat(backend.resources()).isEmpty();
    assertThat(service.liveCount()).as("the run's slot is given back").isZero();
    // a cidr destination is fenced by the proxy and the host's rules: that run starts
    RunService ranged =
        service(
            Map.of(),
            null,
            Map.of("mirror", InternalDestination.range("mirror", "10.20.1.0/28", 443)));
    assertThat(
            ranged.start(ACTOR, AgentGrant.EVERY, new RunRequest(AGENT, List.of("ok"), Map.of())))
        .isNotBlank();
    org.awaitility.Awaitility.await()
        .atMost(Duration.ofSeconds(20))
        .until(() -> ranged.liveCount() == 0);
  }

  @Test
  void invalidLabelsAreRefusedBeforeAnythingIsCreated() {
    RunService service = service(Map.of(), null);
    assertThatThrownBy(
            () ->
                service.start(
                    ACTOR,
                    AgentGrant.EVERY,
                    new RunRequest(
                        AGENT, List.of("ok"), Map.of(), Map.of("agent-sandbox.dev/run-id", "x"))))
        .isInstanceOfSatisfying(
            RunRefusedException.class,
            e -> assertThat(e.refusal()).isEqualTo(Refusal.INVALID_REQUEST));
    assertThat(backend.resources()).isEmpty();
  }
}
