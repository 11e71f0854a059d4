package dev.agentsandbox.backend.docker;

import static dev.agentsandbox.testing.ItRuns.noEgress;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.github.dockerjava.api.DockerClient;
import dev.agentsandbox.backend.Completion;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.backend.session.InvalidWorkspacePathException;
import dev.agentsandbox.backend.session.PathInfo;
import dev.agentsandbox.backend.session.PathRefusedException;
import dev.agentsandbox.backend.session.SessionSandbox;
import dev.agentsandbox.backend.session.Step;
import dev.agentsandbox.backend.session.StepEnd;
import dev.agentsandbox.backend.session.StepListener;
import dev.agentsandbox.backend.session.StepSpec;
import dev.agentsandbox.backend.session.UnableToRunStepException;
import dev.agentsandbox.backend.session.WorkspacePath;
import dev.agentsandbox.testing.DockerObjects;
import dev.agentsandbox.testing.RecordingListener;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A session on the real Docker daemon under each runtime it has (runc, and runsc when registered):
 * one session per runtime, opened at its first test and used by the next in order. Steps run inside
 * the run's workload container (its user, no capabilities, read-only root, its runtime) with their
 * input, folder, environment and status; a background step is killed alone; files and tars go in
 * and come out through the runner; a link planted in the workspace is refused by every operation; a
 * step's egress meets the proxy; the runner's own file cannot be changed by a step; closing refuses
 * later steps and leaves nothing labelled. A warm sandbox is handed to a session too. Run ids start
 * with {@code ds}: other suites' clean-up never takes these sandboxes.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class DockerSessionIT {
  private static final String PREFIX = "ds";
  private static DockerClient client;
  private static DockerBackend backend;
  private static final Map<String, DockerSession> SESSIONS = new ConcurrentHashMap<>();
  private static final Map<String, RecordingListener> LISTENERS = new ConcurrentHashMap<>();
  private static final Map<String, CompletableFuture<Completion>> ENDS = new ConcurrentHashMap<>();
  private static final AtomicInteger STEPS = new AtomicInteger();

  @BeforeAll
  static void daemon() {
    client = DockerItSupport.requireDaemon();
    backend = new DockerBackend(client, DockerBackendConfig.defaults());
  }

  @AfterAll
  static void nothingLeft() {
    SESSIONS.values().forEach(DockerSession::teardown);
    new DockerReaper(client).reap(Instant.now(), runId -> !runId.startsWith(PREFIX));
    assertThat(labelled(PREFIX)).as("labelled objects of this suite").isEmpty();
  }

  static List<String> runtimes() {
    return DockerItSupport.runtimes();
  }

  private static String runId() {
    return PREFIX + HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextInt());
  }

  private static RunSpec spec(String runId, Duration ttl) {
    return new RunSpec(
        runId,
        "session-it",
        DockerItSupport.WORKLOAD_IMAGE,
        List.of("<steps come later>"),
        Map.of("SESSION_VALUE", "from-the-session"),
        noEgress(),
        // runsc's pids cap bounds the Sentry's host threads, and a sandbox past it dies (exit 2,
        // docs/backends/docker.md "Honest limits"); 128 was crossed once by this suite's steps.
        new dev.agentsandbox.policy.config.Resources(1, 256, 512),
        ttl,
        Instant.now().plus(Duration.ofMinutes(30)),
        false);
  }

  /** The runtime's session, opened at first use. */
  private static DockerSession session(String runtime) {
    return SESSIONS.computeIfAbsent(
        runtime,
        r -> {
          RecordingListener listener = new RecordingListener();
          LISTENERS.put(r, listener);
          Instant asked = Instant.now();
          DockerSession opened =
              backend.openSession(spec(runId(), Duration.ofMinutes(20)), listener, r);
          System.out.println(
              "session under " + r + " open in " + Duration.between(asked, Instant.now()));
          // As the run service does: one thread waits in await for the session's whole life.
          CompletableFuture<Completion> end = new CompletableFuture<>();
          Thread.ofVirtual()
              .start(
                  () -> {
                    try {
                      end.complete(opened.await(Instant.now().plus(Duration.ofMinutes(20))));
                    } catch (Exception | Error e) {
                      end.completeExceptionally(e);
                    }
                  });
          ENDS.put(r, end);
          return opened;
        });
  }

  /** Every container, volume and network labelled with a run id starting with {@code prefix}. */
  static List<String> labelled(String prefix) {
    return DockerObjects.ofRunsStartingWith(client, prefix);
  }

  /** A step's output, its streams apart. */
  static final class Output implements StepListener {
    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();

    @Override
    public synchronized void onOutput(byte[] chunk) {
      if (out.size() < (1 << 20)) {
        out.writeBytes(chunk);
      }
    }

    @Override
    public synchronized void onErrorOutput(byte[] chunk) {
      err.writeBytes(chunk);
    }

    synchronized String out() {
      return out.toString(StandardCharsets.UTF_8);
    }

    synchronized String err() {
      return err.toString(StandardCharsets.UTF_8);
    }
  }

  private static StepSpec step(String script, String cwd) {
    return new StepSpec(
        STEPS.incrementAndGet(),
        List.of("sh", "-c", script),
        Map.of(),
        WorkspacePath.parse(cwd),
        new byte[0]);
  }

  private static StepEnd run(SessionSandbox session, String script, Output output)
      throws InterruptedException {
    return session
        .exec(step(script, "."), output)
        .awaitEnd(Instant.now().plus(Duration.ofMinutes(3)))
        .orElseThrow();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("runtimes")
  @Order(1)
  void stepsRunInTheWorkloadContainerWithTheirInputFolderEnvAndStatus(String runtime)
      throws Exception {
    DockerSession session = session(runtime);
    Output output = new Output();
    Step step =
        session.exec(
            new StepSpec(
                STEPS.incrementAndGet(),
                List.of(
                    "sh",
                    "-c",
                    "id -u; pwd; echo \"$STEP_VALUE $SESSION_VALUE\"; cat; echo oops >&2; exit 3"),
                Map.of("STEP_VALUE", "from-the-step"),
                WorkspacePath.root(),
                "from stdin\n".getBytes(StandardCharsets.UTF_8)),
            output);
    StepEnd end = step.awaitEnd(Instant.now().plus(Duration.ofMinutes(3))).orElseThrow();
    assertThat(end.end()).isEqualTo(StepEnd.End.EXIT);
    assertThat(end.exitStatus()).hasValue(3);
    String uid = DockerBackendConfig.defaults().workloadUser().split(":")[0];
    assertThat(output.out())
        .isEqualTo(uid + "\n/workspace\nfrom-the-step from-the-session\nfrom stdin\n");
    assertThat(output.err()).isEqualTo("oops\n");

    Output inApp = new Output();
    run(session, "mkdir -p app/sub", new Output());
    assertThat(
            session
                .exec(step("pwd", "app/sub"), inApp)
                .awaitEnd(Instant.now().plusSeconds(120))
                .orElseThrow()
                .exitStatus())
        .hasValue(0);
    assertThat(inApp.out()).isEqualTo("/workspace/app/sub\n");

    // The run's fence and caps hold for a step: no capabilities, the root read-only, the proxy.
    Output fence = new Output();
    run(
        session,
        "grep CapEff /proc/self/status; touch /probe 2>/dev/null && echo root-writable;"
            + " echo proxy=$HTTPS_PROXY",
        fence);
    assertThat(fence.out())
        .contains("CapEff:\t0000000000000000")
        .doesNotContain("root-writable")
        .containsPattern("proxy=http://[0-9.]+:[0-9]+");
    var inspected = client.inspectContainerCmd(session.workloadContainerId()).exec();
    assertThat(inspected.getHostConfig().getRuntime()).isEqualTo(runtime);
    assertThat(inspected.getHostConfig().getReadonlyRootfs()).isTrue();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("runtimes")
  @Order(2)
  void aStepOverItsTimeIsKilledAndABackgroundStepIsKilledAlone(String runtime) throws Exception {
    DockerSession session = session(runtime);
    Output slow = new Output();
    Step sleeping = session.exec(step("sleep 120", "."), slow);
    assertThat(sleeping.awaitEnd(Instant.now().plusSeconds(2))).as("still running").isEmpty();
    sleeping.kill();
    StepEnd timedOut = sleeping.awaitEnd(Instant.now().plusSeconds(60)).orElseThrow();
    assertThat(timedOut.end()).isEqualTo(StepEnd.End.KILLED);

    Output server = new Output();
    Step background =
        session.exec(step("sleep 600 & echo started; echo $! > /tmp/bg.pid; wait", "."), server);
    Awaitility.await().atMost(Duration.ofMinutes(1)).until(() -> server.out().contains("started"));
    Output beside = new Output();
    assertThat(run(session, "echo beside", beside).exitStatus()).hasValue(0);
    assertThat(beside.out()).isEqualTo("beside\n");
    background.kill();
    StepEnd end = background.awaitEnd(Instant.now().plus(Duration.ofMinutes(1))).orElseThrow();
    assertThat(end.end()).isEqualTo(StepEnd.End.KILLED);
    assertThat(end.exitStatus()).hasValue(137);
    Output left = new Output();
    run(
        session,
        "s=$(sed -n 's/^State:[[:space:]]*\\(.\\).*/\\1/p' /proc/$(cat /tmp/bg.pid)/status"
            + " 2>/dev/null); echo state=${s:-gone}",
        left);
    // Under a runtime without child subreapers (this host's runsc) the killed orphan is a zombie
    // of the container's idle process until the container ends: dead, but not yet reaped.
    assertThat(left.out()).as("what the background step started").matches("state=(gone|Z)\n");
    Output after = new Output();
    assertThat(run(session, "echo after", after).exitStatus()).hasValue(0);
    assertThat(after.out()).isEqualTo("after\n");
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("runtimes")
  @Order(3)
  void filesAndTarsGoInAndComeOutThroughTheRunner(String runtime) throws Exception {
    DockerSession session = session(runtime);
    byte[] content = new byte[300_000];
    ThreadLocalRandom.current().nextBytes(content);
    assertThat(
            session.putFile(
                WorkspacePath.parse("proj/src/data.bin"),
                new ByteArrayInputStream(content),
                1 << 20))
        .isEqualTo(content.length);
    PathInfo info = session.stat(WorkspacePath.parse("proj/src/data.bin"));
    assertThat(info.kind()).isEqualTo(PathInfo.Kind.FILE);
    assertThat(info.size()).isEqualTo(content.length);
    ByteArrayOutputStream back = new ByteArrayOutputStream();
    session.readFile(WorkspacePath.parse("proj/src/data.bin"), back, 1 << 20);
    assertThat(back.toByteArray()).isEqualTo(content);

    ByteArrayOutputStream tarBytes = new ByteArrayOutputStream();
    try (TarArchiveOutputStream tar = new TarArchiveOutputStream(tarBytes)) {
      for (String name : List.of("calc.py", "test/test_calc.py")) {
        byte[] body = ("# " + name + "\n").getBytes(StandardCharsets.UTF_8);
        TarArchiveEntry entry = new TarArchiveEntry(name);
        entry.setSize(body.length);
        tar.putArchiveEntry(entry);
        tar.write(body);
        tar.closeArchiveEntry();
      }
    }
    session.putArchive(
        WorkspacePath.parse("proj/py"), new ByteArrayInputStream(tarBytes.toByteArray()), 1 << 20);
    Output seen = new Output();
    run(
        session,
        "cat proj/py/calc.py proj/py/test/test_calc.py; stat -c '%u %a' proj/py/calc.py",
        seen);
    String uid = DockerBackendConfig.defaults().workloadUser().split(":")[0];
    assertThat(seen.out()).isEqualTo("# calc.py\n# test/test_calc.py\n" + uid + " 644\n");

    ByteArrayOutputStream folder = new ByteArrayOutputStream();
    assertThat(session.readFolder(WorkspacePath.parse("proj"), folder, 1 << 20)).isEmpty();
    Map<String, Long> entries = new TreeMap<>();
    try (TarArchiveInputStream in =
        new TarArchiveInputStream(new ByteArrayInputStream(folder.toByteArray()))) {
      TarArchiveEntry entry;
      while ((entry = in.getNextEntry()) != null) {
        entries.put(entry.getName(), entry.getSize());
      }
    }
    assertThat(entries)
        .containsOnlyKeys(
            "py/", "py/calc.py", "py/test/", "py/test/test_calc.py", "src/", "src/data.bin");
    assertThat(entries.get("src/data.bin")).isEqualTo(content.length);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("runtimes")
  @Order(4)
  void aPathOutOfTheWorkspaceIsRefusedAndALinkIsNeverFollowed(String runtime) throws Exception {
    DockerSession session = session(runtime);
    for (String escaping : List.of("../etc/passwd", "a/../../etc/passwd", "/etc/passwd")) {
      assertThatThrownBy(() -> WorkspacePath.parse(escaping))
          .as(escaping)
          .isInstanceOf(InvalidWorkspacePathException.class);
    }
    assertThat(
            run(session, "ln -s /etc etc-link && ln -s /etc/passwd passwd-link", new Output())
                .exitStatus())
        .hasValue(0);
    Map<String, Runnable> rows = new TreeMap<>();
    rows.put(
        "read through the link",
        () ->
            session.readFile(
                WorkspacePath.parse("etc-link/passwd"), new ByteArrayOutputStream(), 1 << 20));
    rows.put(
        "read the link to a file",
        () ->
            session.readFile(
                WorkspacePath.parse("passwd-link"), new ByteArrayOutputStream(), 1 << 20));
    rows.put(
        "put through the link",
        () ->
            session.putFile(
                WorkspacePath.parse("etc-link/evil"), new ByteArrayInputStream(new byte[1]), 10));
    rows.put(
        "put onto the link",
        () ->
            session.putFile(
                WorkspacePath.parse("passwd-link"), new ByteArrayInputStream(new byte[1]), 10));
    rows.put("list through the link", () -> session.list(WorkspacePath.parse("etc-link"), 10));
    rows.put(
        "archive the link",
        () ->
            session.readFolder(
                WorkspacePath.parse("etc-link"), new ByteArrayOutputStream(), 1 << 20));
    rows.put(
        "a step's cwd through the link", () -> session.exec(step("pwd", "etc-link"), new Output()));
    rows.forEach(
        (name, row) ->
            assertThatThrownBy(row::run)
                .as(name)
                .isInstanceOfSatisfying(
                    PathRefusedException.class,
                    e -> assertThat(e.reason()).isEqualTo(PathRefusedException.Reason.SYMLINK)));
    Output etc = new Output();
    run(session, "ls /etc/evil 2>&1; head -c 4 /etc/passwd", etc);
    assertThat(etc.out()).contains("No such file").contains("root");
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("runtimes")
  @Order(5)
  void aStepsEgressMeetsTheProxyAndNothingElse(String runtime) throws Exception {
    DockerSession session = session(runtime);
    Output output = new Output();
    run(
        session,
        "curl --noproxy '*' -sS -m 5 http://198.18.77.1/ >/dev/null 2>&1; echo direct=$?;"
            + " curl -sS -m 60 -i http://denied.test/",
        output);
    assertThat(output.out())
        .as(output.out() + output.err())
        .containsPattern("direct=(7|28)")
        .contains(" 403")
        .containsIgnoringCase("X-Agent-Sandbox-Denied");
    Awaitility.await("the proxy recorded the denial as the run's")
        .atMost(Duration.ofSeconds(30))
        .until(
            () ->
                LISTENERS.get(runtime).decisions.stream()
                    .anyMatch(d -> d.contains("denied.test") && d.contains("\"deny\"")));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("runtimes")
  @Order(6)
  void aStepCannotChangeTheRunner(String runtime) throws Exception {
    DockerSession session = session(runtime);
    Output output = new Output();
    run(
        session,
        "ls -ln "
            + SessionRunner.DIR
            + "; chmod u+w "
            + SessionRunner.PATH
            + " 2>/dev/null && echo runner-chmod; (: > "
            + SessionRunner.PATH
            + ") 2>/dev/null && echo runner-writable;"
            + " touch "
            + SessionRunner.DIR
            + "/planted 2>/dev/null && echo folder-writable; echo checked",
        output);
    assertThat(output.out())
        .as(output.out())
        .contains("-r-xr-xr-x")
        .doesNotContain("runner-chmod")
        .doesNotContain("runner-writable")
        .doesNotContain("folder-writable")
        .endsWith("checked\n");
    Output alive = new Output();
    assertThat(run(session, "echo alive", alive).exitStatus()).hasValue(0);
    assertThat(alive.out()).isEqualTo("alive\n");
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("runtimes")
  @Order(7)
  void closingCollectsOutputsRefusesStepsAndLeavesNothing(String runtime) throws Exception {
    DockerSession session = session(runtime);
    run(session, "echo kept > out/result.txt", new Output());
    Step lingering = session.exec(step("sleep 600", "."), new Output());
    session.kill();
    Completion end = ENDS.get(runtime).get(3, TimeUnit.MINUTES);
    assertThat(end.end()).as(end.toString()).isEqualTo(Completion.End.KILLED);
    assertThat(lingering.awaitEnd(Instant.now().plusSeconds(60)).orElseThrow().end())
        .isIn(StepEnd.End.KILLED, StepEnd.End.ERROR);
    assertThatThrownBy(() -> session.exec(step("true", "."), new Output()))
        .isInstanceOf(UnableToRunStepException.class)
        .hasMessageContaining("it has ended");
    assertThatThrownBy(() -> session.stat(WorkspacePath.parse("out")))
        .isInstanceOf(UnableToRunStepException.class);
    Map<String, String> outputs = new TreeMap<>();
    try (InputStream archive = session.outputs().orElseThrow();
        TarArchiveInputStream in = new TarArchiveInputStream(archive)) {
      TarArchiveEntry entry;
      while ((entry = in.getNextEntry()) != null) {
        outputs.put(entry.getName(), new String(in.readAllBytes(), StandardCharsets.UTF_8));
      }
    }
    assertThat(outputs).containsEntry("out/result.txt", "kept\n");
    session.teardown();
    SESSIONS.remove(runtime);
    assertThat(labelled(session.runId())).as("left by the teardown").isEmpty();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("runtimes")
  @Order(8)
  void aWarmSandboxIsHandedToASessionOnce(String runtime) throws Exception {
    RunSpec template = spec(runId(), Duration.ofMinutes(5));
    WarmDockerSandbox warm =
        backend.prepare(template, Instant.now().plus(Duration.ofMinutes(5)), runtime);
    try {
      SessionSandbox session = warm.handOverSession(template, new RecordingListener());
      Output output = new Output();
      assertThat(run(session, "echo \"$SESSION_VALUE\"; id -u", output).exitStatus()).hasValue(0);
      String uid = DockerBackendConfig.defaults().workloadUser().split(":")[0];
      assertThat(output.out()).isEqualTo("from-the-session\n" + uid + "\n");
      assertThatThrownBy(() -> warm.handOverSession(template, new RecordingListener()))
          .isInstanceOf(IllegalStateException.class);
      session.kill();
      assertThat(session.await(Instant.now().plus(Duration.ofMinutes(2))).end())
          .isEqualTo(Completion.End.KILLED);
      session.teardown();
      assertThat(labelled(template.runId())).as("left by the teardown").isEmpty();
    } finally {
      warm.discard();
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("runtimes")
  @Order(9)
  void aWorkloadStoppedFromOutsideEndsTheSessionAsFailedAndFailsWhatWasOpen(String runtime)
      throws Exception {
    RecordingListener listener = new RecordingListener();
    DockerSession session =
        backend.openSession(spec(runId(), Duration.ofMinutes(5)), listener, runtime);
    try {
      Step running = session.exec(step("sleep 600", "."), new Output());
      client.killContainerCmd(session.workloadContainerId()).exec();
      Completion end = session.await(Instant.now().plus(Duration.ofMinutes(2)));
      assertThat(end.end()).as(end.toString()).isEqualTo(Completion.End.ERROR);
      // Whichever is seen first: the runner's channel ending, or the container having stopped.
      assertThat(end.detail()).containsPattern("channel ended|ended by itself");
      assertThat(running.awaitEnd(Instant.now().plusSeconds(30)).orElseThrow().end())
          .isIn(StepEnd.End.KILLED, StepEnd.End.ERROR);
      assertThatThrownBy(
              () ->
                  session.putFile(
                      WorkspacePath.parse("late"), new ByteArrayInputStream(new byte[1]), 10))
          .isInstanceOf(UnableToRunStepException.class);
    } finally {
      session.teardown();
    }
    assertThat(labelled(session.runId())).as("left by the teardown").isEmpty();
  }
}
