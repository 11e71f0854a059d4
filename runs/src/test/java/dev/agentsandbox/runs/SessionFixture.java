package dev.agentsandbox.runs;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.agentsandbox.artifacts.FolderArtifactStore;
import dev.agentsandbox.backend.BackendSelector;
import dev.agentsandbox.backend.Isolation;
import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.config.AgentSettings;
import dev.agentsandbox.policy.config.Backend;
import dev.agentsandbox.policy.config.CredentialSpec;
import dev.agentsandbox.policy.config.EgressPolicy;
import dev.agentsandbox.policy.config.OutputLimits;
import dev.agentsandbox.policy.config.Resources;
import dev.agentsandbox.policy.config.SandboxConfig;
import dev.agentsandbox.policy.config.SessionLimits;
import dev.agentsandbox.runs.session.ExecRequest;
import dev.agentsandbox.runs.session.SessionRequest;
import dev.agentsandbox.runs.session.StepView;
import dev.agentsandbox.store.AuditQuery;
import dev.agentsandbox.store.AuditRow;
import dev.agentsandbox.store.Store;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * What the session tests share: a real SQLite store, the in-memory backend whose sessions are local
 * processes, artifacts kept in a folder, and one agent whose ttl, warm pool, session caps and
 * credentials each test may change before it builds the service.
 */
final class SessionFixture implements AutoCloseable {
  static final String AGENT = "helper";
  static final String ACTOR = "admin";
  static final Duration WAIT = Duration.ofSeconds(20);

  final Path temp;
  final ObjectMapper json = new ObjectMapper();
  final ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor();
  final Store store;
  final InMemoryBackend backend;
  int ttlSeconds = 600;
  int warm = 0;
  SessionLimits limits = SessionLimits.DEFAULT;
  boolean runToken = true;
  int maxConcurrentRuns = 4;
  volatile SandboxConfig config;

  SessionFixture(Path temp) {
    this.temp = temp;
    this.store = Store.open("jdbc:sqlite:" + temp.resolve("store.db"));
    this.backend =
        new InMemoryBackend("docker", Isolation.CONTAINER, Clock.systemUTC())
            .script("true", InMemoryBackend.Script.exits(0, "done\n"));
  }

  SandboxConfig config() {
    TreeMap<String, CredentialSpec> credentials = new TreeMap<>();
    if (runToken) {
      credentials.put(
          "self",
          new CredentialSpec(
              "self",
              CredentialSpec.Source.RUN_TOKEN,
              Optional.empty(),
              Optional.empty(),
              Optional.of("RUN_TOKEN")));
    }
    TreeMap<String, AgentSettings> agents = new TreeMap<>();
    agents.put(
        AGENT,
        new AgentSettings(
            AllowList.parse(List.of("api.vendor.com")),
            AgentSettings.DEFAULT_IMAGE,
            AGENT,
            ttlSeconds,
            Resources.DEFAULT,
            credentials,
            new OutputLimits(1 << 20, 10),
            new TreeMap<>(),
            warm,
            limits));
    return new SandboxConfig(true, Backend.AUTO, false, agents);
  }

  RunService service() {
    return service(backend, "cp-1");
  }

  RunService service(dev.agentsandbox.backend.SandboxBackend with, String instance) {
    config = config();
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
    return new RunService(
        configs,
        new BackendSelector(List.of(with)),
        store,
        OperatorEgress.NONE,
        new RunSettings(
                instance,
                RunSettings.DEFAULT_TAIL_BYTES,
                100,
                maxConcurrentRuns,
                16,
                Duration.ofMinutes(5))
            .withSpool(temp),
        Clock.systemUTC(),
        executor,
        json,
        new RunContractServices(
            new CredentialMinter(store.tokens(), Optional.empty(), Map.of()),
            Optional.of(
                RunContractServices.Artifacts.of(
                    new FolderArtifactStore(temp.resolve("artifacts")), temp.resolve("spool")))));
  }

  static SessionRequest open() {
    return new SessionRequest(AGENT, Map.of(), Map.of(), OptionalInt.empty());
  }

  static SessionRequest open(Map<String, String> env, int idleSeconds) {
    return new SessionRequest(AGENT, env, Map.of(), OptionalInt.of(idleSeconds));
  }

  static ExecRequest sh(String script) {
    return new ExecRequest(List.of("sh", "-c", script), Map.of(), "/workspace", "", 60, false);
  }

  static ExecRequest background(String script) {
    return new ExecRequest(List.of("sh", "-c", script), Map.of(), "/workspace", "", 600, true);
  }

  static StepView run(RunService service, String runId, ExecRequest step)
      throws InterruptedException {
    return service.sessions().exec(ACTOR, runId, step).await();
  }

  /** The rows of exactly {@code type} (every type when null) of {@code runId}, oldest first. */
  List<AuditRow> audit(String type, String runId) {
    List<AuditRow> all = new java.util.ArrayList<>();
    long after = 0;
    for (int page = 0; page < 100; page++) {
      List<AuditRow> rows =
          store.audit().query(new AuditQuery(type, null, runId, null, after, 1000));
      rows.stream().filter(row -> type == null || row.type().equals(type)).forEach(all::add);
      if (rows.size() < 1000) {
        break;
      }
      after = rows.get(rows.size() - 1).id();
    }
    return all;
  }

  @Override
  public void close() {
    executor.shutdownNow();
    store.close();
  }
}
