package dev.agentsandbox.backend.microvm;

import static dev.agentsandbox.backend.microvm.MicroVmItSupport.SUITE;
import static dev.agentsandbox.backend.microvm.MicroVmItSupport.cleanUpAndAssertNothingLeft;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.agentsandbox.backend.Completion;
import dev.agentsandbox.backend.session.PathInfo;
import dev.agentsandbox.backend.session.PathRefusedException;
import dev.agentsandbox.backend.session.SessionSandbox;
import dev.agentsandbox.backend.session.Step;
import dev.agentsandbox.backend.session.StepEnd;
import dev.agentsandbox.backend.session.StepListener;
import dev.agentsandbox.backend.session.StepSpec;
import dev.agentsandbox.backend.session.UnableToRunStepException;
import dev.agentsandbox.backend.session.WorkspacePath;
import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.config.InternalDestination;
import dev.agentsandbox.policy.config.RunEgress;
import dev.agentsandbox.testing.HostDrill;
import dev.agentsandbox.testing.ItRuns;
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
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ThreadLocalRandom;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * A session on a real VM (QEMU, TCG here): steps, files in and out, links refused, the fence
 * holding for a step, a background step killed with all it started, the runner surviving a fork
 * bomb and a flood, and the session's end leaving nothing. One VM for the whole class, booted once.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class MicroVmSessionIT {
  /** This suite's run ids: its clean-up reaps these and no other suite's. */
  static final String PREFIX = "itss";

  private static final HostDrill.Layout DRILL =
      new HostDrill.Layout("asbs-up0", "asbs-meta0", "198.18.79.1", "0.0.0.0");

  private static MicroVmBackend backend;
  private static HostDrill drill;
  private static SessionSandbox session;
  private static final RecordingListener SANDBOX = new RecordingListener();
  private static int steps;

  @BeforeAll
  static void open() throws Exception {
    backend = MicroVmItSupport.requireBackend();
    drill = HostDrill.start(DRILL);
    RunEgress egress =
        new RunEgress(
            AllowList.parse(List.of("upstream.test:" + drill.upstreamPort())),
            Optional.empty(),
            List.of(
                InternalDestination.range("upstream", drill.upstreamCidr(), drill.upstreamPort())),
            Map.of("upstream.test", List.of(drill.upstreamAddress())));
    String runId = PREFIX + HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextInt());
    Instant asked = Instant.now();
    session =
        backend.openSession(
            SUITE.spec(runId, List.of("true"), egress, SUITE.smallCaps(), Duration.ofMinutes(20)),
            SANDBOX);
    System.out.println(
        "session open (VM booted, runner ready) in " + Duration.between(asked, Instant.now()));
  }

  @AfterAll
  static void close() throws Exception {
    if (session != null) {
      session.teardown();
    }
    if (drill != null) {
      drill.close();
    }
    if (backend != null) {
      cleanUpAndAssertNothingLeft(backend, PREFIX);
    }
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

  private static StepSpec step(String script, String cwd, String stdin) {
    return new StepSpec(
        ++steps,
        List.of("sh", "-c", script),
        Map.of(),
        WorkspacePath.parse(cwd),
        stdin.getBytes(StandardCharsets.UTF_8));
  }

  private static StepEnd run(String script, Output output) throws InterruptedException {
    Step started = session.exec(step(script, ".", ""), output);
    return started.awaitEnd(Instant.now().plus(Duration.ofMinutes(3))).orElseThrow();
  }

  @Test
  @Order(1)
  void stepsRunAsTheWorkloadInTheWorkspaceWithTheirInputEnvAndStatus() throws Exception {
    Output output = new Output();
    Step step =
        session.exec(
            new StepSpec(
                ++steps,
                List.of("sh", "-c", "id -u; pwd; echo \"$STEP_VALUE\"; cat; echo oops >&2; exit 3"),
                Map.of("STEP_VALUE", "from-the-step"),
                WorkspacePath.root(),
                "from stdin\n".getBytes(StandardCharsets.UTF_8)),
            output);
    StepEnd end = step.awaitEnd(Instant.now().plus(Duration.ofMinutes(3))).orElseThrow();
    assertThat(end.exitStatus()).hasValue(3);
    assertThat(output.out()).isEqualTo("65534\n/workspace\nfrom-the-step\nfrom stdin\n");
    assertThat(output.err()).isEqualTo("oops\n");
    Output again = new Output();
    assertThat(run("mkdir -p app && cd app && echo $HTTPS_PROXY", again).exitStatus()).hasValue(0);
    assertThat(again.out()).startsWith("http://10.");
    Output inApp = new Output();
    session.exec(step("pwd", "app", ""), inApp).awaitEnd(Instant.now().plusSeconds(120));
    assertThat(inApp.out()).isEqualTo("/workspace/app\n");
  }

  @Test
  @Order(2)
  void filesGoInAndComeOutWhole() throws Exception {
    byte[] content = new byte[300_000];
    ThreadLocalRandom.current().nextBytes(content);
    assertThat(
            session.putFile(
                WorkspacePath.parse("proj/src/data.bin"),
                new ByteArrayInputStream(content),
                1 << 20))
        .isEqualTo(content.length);
    session.putFile(
        WorkspacePath.parse("proj/run.sh"),
        new ByteArrayInputStream("echo ran\n".getBytes(StandardCharsets.UTF_8)),
        1024);
    PathInfo info = session.stat(WorkspacePath.parse("proj/src/data.bin"));
    assertThat(info.kind()).isEqualTo(PathInfo.Kind.FILE);
    assertThat(info.size()).isEqualTo(content.length);
    assertThat(info.mode() & 0777).isEqualTo(0644);
    Output owner = new Output();
    run(
        "stat -c '%u %a' proj/src/data.bin; sh proj/run.sh; cmp proj/src/data.bin proj/src/data.bin && echo same",
        owner);
    assertThat(owner.out()).isEqualTo("65534 644\nran\nsame\n");
    ByteArrayOutputStream back = new ByteArrayOutputStream();
    session.readFile(WorkspacePath.parse("proj/src/data.bin"), back, 1 << 20);
    assertThat(back.toByteArray()).isEqualTo(content);
    assertThat(session.list(WorkspacePath.parse("proj"), 10).stream().map(e -> e.path().name()))
        .containsExactly("run.sh", "src");
    ByteArrayOutputStream tar = new ByteArrayOutputStream();
    List<String> skipped = session.readFolder(WorkspacePath.parse("proj"), tar, 1 << 20);
    assertThat(skipped).isEmpty();
    Map<String, Long> entries = new TreeMap<>();
    try (TarArchiveInputStream in =
        new TarArchiveInputStream(new ByteArrayInputStream(tar.toByteArray()))) {
      TarArchiveEntry entry;
      while ((entry = in.getNextEntry()) != null) {
        entries.put(entry.getName(), entry.getSize());
      }
    }
    assertThat(entries).containsOnlyKeys("run.sh", "src/", "src/data.bin");
    assertThat(entries.get("src/data.bin")).isEqualTo(content.length);
    assertThatThrownBy(
            () ->
                session.readFile(
                    WorkspacePath.parse("proj/src/data.bin"), new ByteArrayOutputStream(), 1000))
        .isInstanceOfSatisfying(
            PathRefusedException.class,
            e -> assertThat(e.reason()).isEqualTo(PathRefusedException.Reason.TOO_LARGE));
  }

  @Test
  @Order(3)
  void aLinkThatPointsOutOfTheWorkspaceIsRefusedNotFollowed() throws Exception {
    assertThat(
            run("ln -s /etc etc-link && ln -s /etc/passwd passwd-link", new Output()).exitStatus())
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
        "a step's cwd through the link",
        () -> session.exec(step("pwd", "etc-link", ""), new Output()));
    rows.forEach(
        (name, row) ->
            assertThatThrownBy(row::run)
                .as(name)
                .isInstanceOfSatisfying(
                    PathRefusedException.class,
                    e -> assertThat(e.reason()).isEqualTo(PathRefusedException.Reason.SYMLINK)));
    Output listing = new Output();
    run("ls /etc/evil 2>&1; head -c 4 /etc/passwd", listing);
    assertThat(listing.out()).contains("No such file").contains("root");
  }

  @Test
  @Order(4)
  void theFenceHoldsForAStep() throws Exception {
    String direct = "http://" + drill.upstreamAddress() + ":" + drill.upstreamPort() + "/";
    Output output = new Output();
    run(
        "curl --noproxy '*' -sS -m 10 "
            + direct
            + " >/dev/null 2>&1; echo direct=$?;"
            + " curl -sS -m 60 -o /dev/null -w 'denied=%{http_code}\\n' http://denied.test:"
            + drill.upstreamPort()
            + "/;"
            + " curl -sS -m 60 http://upstream.test:"
            + drill.upstreamPort()
            + "/",
        output);
    assertThat(output.out())
        .as(output.out() + output.err())
        .contains("direct=7")
        .contains("denied=403")
        .contains("hello from upstream");
    Awaitility.await("the proxy recorded the denial")
        .atMost(Duration.ofSeconds(30))
        .until(
            () ->
                SANDBOX.decisions.stream()
                    .anyMatch(d -> d.contains("denied.test") && d.contains("\"deny\"")));
  }

  @Test
  @Order(5)
  void aBackgroundStepIsKilledWithEverythingItStartedEvenWhatLeftItsGroup() throws Exception {
    Output output = new Output();
    Step background =
        session.exec(step("setsid sleep 600 & sleep 600 & echo started; wait", ".", ""), output);
    Awaitility.await().atMost(Duration.ofMinutes(2)).until(() -> output.out().contains("started"));
    Output quiet = new Output();
    assertThat(run("echo beside", quiet).exitStatus()).hasValue(0);
    assertThat(quiet.out()).isEqualTo("beside\n");
    background.kill();
    StepEnd end = background.awaitEnd(Instant.now().plus(Duration.ofMinutes(2))).orElseThrow();
    assertThat(end.end()).isEqualTo(StepEnd.End.KILLED);
    assertThat(end.exitStatus()).hasValue(137);
    Output left = new Output();
    run(
        "n=0; for c in /proc/[0-9]*/cmdline; do tr '\\0' ' ' <$c 2>/dev/null | grep -q '^sleep 600' && n=$((n+1)); done; echo left=$n",
        left);
    assertThat(left.out()).isEqualTo("left=0\n");
  }

  @Test
  @Order(6)
  void theRunnerSurvivesAForkBombAFloodAndAStepThatClosesItsStreams() throws Exception {
    Output bomb = new Output();
    run(
        "( n=0; while [ $n -lt 400 ]; do sleep 120 & n=$((n+1)); echo $n >/tmp/n; done ) 2>/dev/null; read -r n </tmp/n; echo started=$n",
        bomb);
    assertThat(bomb.out()).startsWith("started=");
    assertThat(Integer.parseInt(bomb.out().strip().substring(8)))
        .as("stopped by pids.max")
        .isLessThan(128);
    Output flood = new Output();
    Step flooding = session.exec(step("yes flood", ".", ""), flood);
    Awaitility.await().atMost(Duration.ofMinutes(1)).until(() -> flood.out().length() > 100_000);
    Instant asked = Instant.now();
    Output beside = new Output();
    assertThat(run("echo beside the flood", beside).exitStatus()).hasValue(0);
    System.out.println(
        "a step beside a flooding one took " + Duration.between(asked, Instant.now()));
    assertThat(beside.out()).isEqualTo("beside the flood\n");
    flooding.kill();
    assertThat(flooding.awaitEnd(Instant.now().plusSeconds(120)).orElseThrow().end())
        .isEqualTo(StepEnd.End.KILLED);
    assertThat(run("exec >&- 2>&- <&-; exit 6", new Output()).exitStatus()).hasValue(6);
    Output alive = new Output();
    run("echo alive", alive);
    assertThat(alive.out()).isEqualTo("alive\n");
  }

  @Test
  @Order(7)
  void aStepCannotReachTheRunnersPortOrFiles() throws Exception {
    Output output = new Output();
    run(
        "ls /dev; [ -e /proc/$$/fd ] && echo self-seen; echo runner=$PPID;"
            + " ls /proc/$PPID/fd >/dev/null 2>&1 && echo runner-fds-visible;"
            + " ls /sys/fs/cgroup 2>&1 | head -1",
        output);
    // The runner is the step's parent; hidepid=2 hides a non-dumpable process even from its uid.
    assertThat(output.out())
        .as("a step sees its own /proc, not the runner's fds, the port or the cgroups")
        .contains("self-seen")
        .containsPattern("runner=[1-9][0-9]+")
        .doesNotContain("runner-fds-visible")
        .doesNotContain("vport")
        .doesNotContain("asb-control")
        .contains("/sys/fs/cgroup: No such file or directory");
  }

  @Test
  @Order(8)
  void endingTheSessionCollectsItsOutputsRefusesStepsAndLeavesNothing() throws Exception {
    run("echo kept > out/result.txt", new Output());
    Step lingering = session.exec(step("sleep 600", ".", ""), new Output());
    session.kill();
    Completion end = session.await(Instant.now().plus(Duration.ofMinutes(3)));
    assertThat(end.end()).as(end.toString()).isEqualTo(Completion.End.KILLED);
    assertThat(lingering.awaitEnd(Instant.now().plusSeconds(30)).orElseThrow().end())
        .isEqualTo(StepEnd.End.KILLED);
    assertThatThrownBy(() -> session.exec(step("true", ".", ""), new Output()))
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
    session = null;
    cleanUpAndAssertNothingLeft(backend, PREFIX);
  }

  @Test
  @Order(9)
  void aGuestThatBreaksTheProtocolHasItsVmKilledAndTheSessionFails() throws Exception {
    String runId = PREFIX + HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextInt());
    MicroVmSession hostile =
        (MicroVmSession)
            backend.openSession(
                SUITE.spec(
                    runId,
                    List.of("true"),
                    ItRuns.noEgress(),
                    SUITE.smallCaps(),
                    Duration.ofMinutes(10)),
                SANDBOX);
    try {
      Step running = hostile.exec(step("sleep 600", ".", ""), new Output());
      // What the port would deliver from a guest announcing a 2 GiB frame.
      hostile.received(new byte[] {0x7f, (byte) 0xff, (byte) 0xff, (byte) 0xff, 0x42, 0, 0, 0, 1});
      Completion end = hostile.await(Instant.now().plus(Duration.ofMinutes(2)));
      assertThat(end.end()).isEqualTo(Completion.End.ERROR);
      assertThat(end.detail()).contains("broke the protocol").contains("over the limit of 65536");
      assertThat(running.awaitEnd(Instant.now().plusSeconds(10)).orElseThrow().end())
          .isEqualTo(StepEnd.End.ERROR);
      assertThat(hostile.vm().vmmPid())
          .satisfies(
              pid ->
                  assertThat(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false))
                      .isFalse());
      assertThatThrownBy(() -> hostile.stat(WorkspacePath.root()))
          .isInstanceOf(UnableToRunStepException.class);
    } finally {
      hostile.teardown();
    }
    cleanUpAndAssertNothingLeft(backend, PREFIX);
  }
}
