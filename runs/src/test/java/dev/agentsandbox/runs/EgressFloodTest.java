package dev.agentsandbox.runs;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.agentsandbox.backend.BackendSelector;
import dev.agentsandbox.backend.Isolation;
import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.config.AgentGrant;
import dev.agentsandbox.policy.config.AgentSettings;
import dev.agentsandbox.policy.config.Backend;
import dev.agentsandbox.policy.config.EgressPolicy;
import dev.agentsandbox.policy.config.Resources;
import dev.agentsandbox.policy.config.SandboxConfig;
import dev.agentsandbox.policy.event.EgressDenialsCounted;
import dev.agentsandbox.policy.event.EgressRecorded;
import dev.agentsandbox.policy.event.EventType;
import dev.agentsandbox.policy.event.TornDown;
import dev.agentsandbox.policy.net.Reason;
import dev.agentsandbox.runs.InMemoryBackend.Ending;
import dev.agentsandbox.runs.InMemoryBackend.Script;
import dev.agentsandbox.runs.audit.RecordedEvent;
import dev.agentsandbox.runs.audit.RunTimeline;
import dev.agentsandbox.runs.audit.RunTrail;
import dev.agentsandbox.store.AuditQuery;
import dev.agentsandbox.store.Store;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A workload that floods its proxy with refused requests writes a bounded number of audit rows, and
 * every refusal is still accounted for: in a row of its own or in a count, the totals exact in the
 * teardown row and in the timeline. Real SQLite; thousands of real decision lines.
 */
class EgressFloodTest {
  @TempDir Path temp;
  private final ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor();
  private Store store;

  @BeforeEach
  void open() {
    store = Store.open("jdbc:sqlite:" + temp.resolve("store.db"));
  }

  @AfterEach
  void close() {
    executor.shutdownNow();
    store.close();
  }

  /** A clock the test moves. */
  private static final class TestClock extends Clock {
    private final AtomicReference<Instant> now =
        new AtomicReference<>(Instant.parse("2026-12-01T10:00:00Z"));

    void advance(Duration by) {
      now.updateAndGet(t -> t.plus(by));
    }

    @Override
    public java.time.ZoneId getZone() {
      return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(java.time.ZoneId zone) {
      return this;
    }

    @Override
    public Instant instant() {
      return now.get();
    }
  }

  private long rows(String type, String runId) {
    return store.audit().query(new AuditQuery(type, null, runId, null, null, 1000)).stream()
        .filter(r -> r.type().equals(type))
        .count();
  }

  @Test
  void tenThousandRefusalsOverTwoMinutesWriteBoundedRowsWithExactCounts() {
    TestClock clock = new TestClock();
    EgressRecorder recorder =
        new EgressRecorder(
            "rflood00000000000001",
            "helper",
            "admin",
            new RunTrail(store.audit()),
            new ObjectMapper(),
            100,
            EgressRecorder.Limits.DEFAULT,
            clock);
    int refusals = 10_000;
    for (int i = 0; i < refusals; i++) {
      // The loop a workload runs: one host over and over, and now and then a made-up one.
      String host = i % 10 == 0 ? "r" + i + ".flood.test" : "evil.example";
      recorder.accept(
          Decisions.deny(host, 443, i % 3 == 0 ? Reason.IP_LITERAL : Reason.NOT_ALLOWED));
      clock.advance(Duration.ofMillis(12));
    }
    recorder.finish();

    long full = rows(EventType.EGRESS_DENY.wireName(), "rflood00000000000001");
    List<EgressDenialsCounted> counted =
        store
            .audit()
            .query(
                new AuditQuery(
                    EventType.EGRESS_DENY_COUNTED.wireName(),
                    null,
                    "rflood00000000000001",
                    null,
                    null,
                    1000))
            .stream()
            .map(RecordedEvent::of)
            .flatMap(r -> r.as(EgressDenialsCounted.class).stream())
            .toList();
    assertThat(full).as("rows in full: the run's limit").isEqualTo(500);
    // 120 s of refusals past the limits, one count per minute (and the last at the end).
    assertThat(counted).hasSizeBetween(2, 3);
    assertThat(counted.stream().mapToLong(EgressDenialsCounted::count).sum() + full)
        .as("every refusal in a row of its own or in a count")
        .isEqualTo(refusals);
    assertThat(recorder.totals().denied()).isEqualTo(refusals);
    assertThat(recorder.totals().deniedInFull()).isEqualTo(full);
    assertThat(counted)
        .allSatisfy(c -> assertThat(c.hosts().size()).isLessThanOrEqualTo(50))
        .anySatisfy(c -> assertThat(c.otherHosts()).isPositive());
  }

  @Test
  void aFloodedRunsRowsAreBoundedAndItsTeardownAndTimelineCountEveryRefusal() {
    int refusals = 5_000;
    List<String> lines = new ArrayList<>();
    lines.add(Decisions.allow("api.vendor.com", 443, true));
    for (int i = 0; i < refusals; i++) {
      lines.add(
          Decisions.deny(i % 2 == 0 ? "evil.example" : "h" + i + ".test", 80, Reason.NOT_ALLOWED));
    }
    InMemoryBackend backend =
        new InMemoryBackend("docker", Isolation.CONTAINER, Clock.systemUTC())
            .script("flood", new Script(Ending.EXIT, 0, "", lines, false));
    TreeMap<String, AgentSettings> agents = new TreeMap<>();
    agents.put(
        "helper",
        new AgentSettings(
            AllowList.parse(List.of("api.vendor.com")),
            AgentSettings.DEFAULT_IMAGE,
            "helper",
            60,
            Resources.DEFAULT));
    SandboxConfig config = new SandboxConfig(true, Backend.AUTO, false, agents);
    RunService service =
        new RunService(
            new ConfigSource() {
              @Override
              public SandboxConfig sandbox() {
                return config;
              }

              @Override
              public EgressPolicy egress() {
                return EgressPolicy.DEFAULT;
              }
            },
            new BackendSelector(List.of(backend)),
            store,
            OperatorEgress.NONE,
            new RunSettings("cp-1", RunSettings.DEFAULT_TAIL_BYTES, 100, 4, 16),
            Clock.systemUTC(),
            executor,
            new ObjectMapper(),
            RunContractServices.Config.NONE.services(store));

    String runId;
    try {
      runId =
          service
              .run("admin", AgentGrant.EVERY, new RunRequest("helper", List.of("flood"), Map.of()))
              .record()
              .runId();
    } catch (InterruptedException e) {
      throw new AssertionError(e);
    }
    org.awaitility.Awaitility.await()
        .atMost(Duration.ofSeconds(20))
        .until(() -> rows(EventType.TEARDOWN.wireName(), runId) == 1);

    long all = store.audit().query(new AuditQuery(null, null, runId, null, null, 1000)).size();
    assertThat(all)
        .as("every row of the run: launch, started, 500 + 1 egress, counts, end")
        .isLessThan(520);
    RunTimeline timeline = service.timeline(runId);
    TornDown teardown = timeline.last(TornDown.class).orElseThrow().event();
    assertThat(teardown.egress()).isPresent();
    assertThat(teardown.egress().get().denied()).isEqualTo(refusals);
    assertThat(teardown.egress().get().deniedInFull()).isEqualTo(500);
    assertThat(timeline.deniedTotal()).as("the rows account for every refusal").isEqualTo(refusals);
    assertThat(timeline.allowed())
        .extracting(s -> s.event().host())
        .containsExactly("api.vendor.com");
    assertThat(timeline.all(EgressRecorded.class)).hasSize(501);
  }
}
