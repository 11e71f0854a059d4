package dev.agentsandbox.steprunner;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.agentsandbox.backend.session.PathRefusedException;
import dev.agentsandbox.backend.session.Step;
import dev.agentsandbox.backend.session.StepEnd;
import dev.agentsandbox.backend.session.StepSpec;
import dev.agentsandbox.backend.session.UnableToRunStepException;
import dev.agentsandbox.backend.session.WorkspacePath;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The runner's steps, driven over pipes as the host drives it in a VM. */
class StepRunnerStepsTest {
  @TempDir Path dir;
  private LocalRunner runner;
  private int number;

  @BeforeEach
  void start() throws Exception {
    runner = LocalRunner.start(dir);
  }

  @AfterEach
  void stop() throws Exception {
    runner.close();
    assertThat(runner.violations).as("protocol violations").isEmpty();
  }

  private StepSpec spec(String script, Map<String, String> env, String cwd, String stdin) {
    return new StepSpec(
        ++number,
        List.of("sh", "-c", script),
        env,
        WorkspacePath.parse(cwd),
        stdin.getBytes(StandardCharsets.UTF_8));
  }

  private StepEnd run(StepSpec spec, Recording output) throws InterruptedException {
    Step step = runner.client.exec(spec, output);
    return step.awaitEnd(Instant.now().plusSeconds(30)).orElseThrow();
  }

  @Test
  void aStepGetsItsArgvEnvOverlayCwdAndStdinAndKeepsItsStreamsApart() throws Exception {
    Files.createDirectories(runner.workspace.resolve("app"));
    Recording output = new Recording();
    StepEnd end =
        run(
            spec(
                "echo \"$SESSION_VALUE $STEP_VALUE $(pwd)\"; echo oops >&2; cat; exit 3",
                Map.of("STEP_VALUE", "from-the-step"),
                "app",
                "line one\nline two\n"),
            output);
    assertThat(end.end()).isEqualTo(StepEnd.End.EXIT);
    assertThat(end.exitStatus()).hasValue(3);
    assertThat(output.out())
        .isEqualTo(
            "from-the-session from-the-step "
                + runner.workspace.resolve("app").toRealPath()
                + "\nline one\nline two\n");
    assertThat(output.err()).isEqualTo("oops\n");
  }

  @Test
  void theStepsEnvironmentReplacesTheSessionsValueOfTheSameName() throws Exception {
    Recording output = new Recording();
    run(spec("echo $SESSION_VALUE", Map.of("SESSION_VALUE", "replaced"), ".", ""), output);
    assertThat(output.out()).isEqualTo("replaced\n");
  }

  @Test
  void aStepKilledByASignalReportsOneHundredTwentyEightPlusIt() throws Exception {
    StepEnd end = run(spec("kill -TERM $$; sleep 5", Map.of(), ".", ""), new Recording());
    assertThat(end.exitStatus()).hasValue(128 + 15);
    assertThat(end.end()).isEqualTo(StepEnd.End.EXIT);
  }

  @Test
  void aCommandThatIsNotThereExitsOneHundredTwentySevenAndSaysSo() throws Exception {
    Recording output = new Recording();
    Step step =
        runner.client.exec(
            new StepSpec(
                ++number, List.of("no-such-program"), Map.of(), WorkspacePath.root(), null),
            output);
    StepEnd end = step.awaitEnd(Instant.now().plusSeconds(30)).orElseThrow();
    assertThat(end.exitStatus()).hasValue(127);
    assertThat(output.err()).contains("cannot execute no-such-program");
  }

  @Test
  void aKillReachesTheStepsWholeProcessGroup() throws Exception {
    Recording output = new Recording();
    Step step =
        runner.client.exec(
            spec("sleep 300 & echo $!; sleep 300 & echo $!; wait", Map.of(), ".", ""), output);
    Awaitility.await()
        .atMost(Duration.ofSeconds(10))
        .until(() -> output.out().lines().count() == 2);
    List<Long> children = output.out().lines().map(Long::parseLong).toList();
    step.kill();
    StepEnd end = step.awaitEnd(Instant.now().plusSeconds(30)).orElseThrow();
    assertThat(end.end()).isEqualTo(StepEnd.End.KILLED);
    assertThat(end.exitStatus()).hasValue(137);
    for (long child : children) {
      Awaitility.await("background child " + child + " gone")
          .atMost(Duration.ofSeconds(10))
          .until(() -> ProcessHandle.of(child).map(p -> !p.isAlive()).orElse(true));
    }
  }

  @Test
  void aKilledStepEndsEvenWhileAProcessThatLeftItsGroupHoldsItsOutputOpen() throws Exception {
    // Without a cgroup (these tests run without one), a setsid child escapes the group kill; the
    // step still ends once its drain time is over. In a VM the step's cgroup kills that child too.
    Recording output = new Recording();
    Step step =
        runner.client.exec(spec("setsid sleep 300 & echo $!; wait", Map.of(), ".", ""), output);
    Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> !output.out().isBlank());
    long escaped = Long.parseLong(output.out().strip());
    try {
      step.kill();
      StepEnd end = step.awaitEnd(Instant.now().plusSeconds(15)).orElseThrow();
      assertThat(end.end()).isEqualTo(StepEnd.End.KILLED);
    } finally {
      ProcessHandle.of(escaped).ifPresent(ProcessHandle::destroyForcibly);
    }
  }

  @Test
  void whatAStepLeftRunningWhenItExitedIsKilled() throws Exception {
    Recording output = new Recording();
    StepEnd end = run(spec("sleep 300 >/dev/null & echo $!", Map.of(), ".", ""), output);
    assertThat(end.exitStatus()).hasValue(0);
    long left = Long.parseLong(output.out().strip());
    Awaitility.await()
        .atMost(Duration.ofSeconds(10))
        .until(() -> ProcessHandle.of(left).map(p -> !p.isAlive()).orElse(true));
  }

  @Test
  void aStepThatClosesItsStreamsStillEndsWithItsStatus() throws Exception {
    StepEnd end =
        run(
            spec("exec >&- 2>&- <&-; sleep 0.3; exit 4", Map.of(), ".", "unread input\n"),
            new Recording());
    assertThat(end.exitStatus()).hasValue(4);
  }

  @Test
  void aStepThatReadsNoInputDoesNotHoldTheRunner() throws Exception {
    // More input than a pipe holds, never read: the runner must not block on writing it.
    String input = "x".repeat(512 * 1024);
    StepEnd end = run(spec("sleep 0.2; exit 5", Map.of(), ".", input), new Recording());
    assertThat(end.exitStatus()).hasValue(5);
    Recording next = new Recording();
    run(spec("echo still here", Map.of(), ".", ""), next);
    assertThat(next.out()).isEqualTo("still here\n");
  }

  @Test
  void aFloodingStepDoesNotHoldUpAnotherStepsOutput() throws Exception {
    Recording flood = new Recording();
    Step flooding = runner.client.exec(spec("yes flood", Map.of(), ".", ""), flood);
    Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> flood.outBytes() > (4 << 20));
    List<Duration> waits = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      Recording quiet = new Recording();
      Instant asked = Instant.now();
      StepEnd end = run(spec("echo hi", Map.of(), ".", ""), quiet);
      waits.add(Duration.between(asked, quiet.firstOutput));
      assertThat(end.exitStatus()).hasValue(0);
      assertThat(quiet.out()).isEqualTo("hi\n");
    }
    long before = flood.outBytes();
    // Bounded: the quiet steps' output came through while the flood went on beside them.
    assertThat(waits).allSatisfy(w -> assertThat(w).isLessThan(Duration.ofSeconds(5)));
    Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> flood.outBytes() > before);
    flooding.kill();
    assertThat(flooding.awaitEnd(Instant.now().plusSeconds(30)).orElseThrow().end())
        .isEqualTo(StepEnd.End.KILLED);
  }

  @Test
  void eightStepsRunAtOnceAndANinthIsRefused() throws Exception {
    List<Step> running = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      running.add(runner.client.exec(spec("sleep 300", Map.of(), ".", ""), new Recording()));
    }
    assertThatThrownBy(() -> runner.client.exec(spec("true", Map.of(), ".", ""), new Recording()))
        .isInstanceOf(UnableToRunStepException.class)
        .hasMessageContaining("8 steps are running");
    for (Step step : running) {
      step.kill();
      assertThat(step.awaitEnd(Instant.now().plusSeconds(30))).isPresent();
    }
    StepEnd end = run(spec("true", Map.of(), ".", ""), new Recording());
    assertThat(end.exitStatus()).hasValue(0);
  }

  @Test
  void theRunnerSurvivesAStepThatForksUntilItCannot() throws Exception {
    // Bounded by ulimit -u inside the step: the host's pids limit is not the test's to exhaust.
    StepEnd end =
        run(
            spec(
                "ulimit -u 40; ( i=0; while [ $i -lt 200 ]; do sleep 60 & i=$((i+1)); done ) 2>/dev/null;"
                    + " exit 0",
                Map.of(),
                ".",
                ""),
            new Recording());
    assertThat(end.exitStatus()).hasValue(0);
    Recording after = new Recording();
    run(spec("echo alive", Map.of(), ".", ""), after);
    assertThat(after.out()).isEqualTo("alive\n");
  }

  @Test
  void aCwdThatIsALinkIsRefusedNotFollowed() throws Exception {
    Path outside = Files.createDirectories(dir.resolve("outside"));
    Files.createSymbolicLink(runner.workspace.resolve("link"), outside);
    Files.writeString(runner.workspace.resolve("file"), "x");
    assertThatThrownBy(() -> runner.client.exec(spec("pwd", Map.of(), "link", ""), new Recording()))
        .isInstanceOfSatisfying(
            PathRefusedException.class,
            e -> assertThat(e.reason()).isEqualTo(PathRefusedException.Reason.SYMLINK))
        .hasMessageContaining("/workspace/link is a symbolic link");
    assertThatThrownBy(() -> runner.client.exec(spec("pwd", Map.of(), "file", ""), new Recording()))
        .isInstanceOfSatisfying(
            PathRefusedException.class,
            e -> assertThat(e.reason()).isEqualTo(PathRefusedException.Reason.WRONG_KIND));
    assertThatThrownBy(
            () -> runner.client.exec(spec("pwd", Map.of(), "missing", ""), new Recording()))
        .isInstanceOfSatisfying(
            PathRefusedException.class,
            e -> assertThat(e.reason()).isEqualTo(PathRefusedException.Reason.NOT_FOUND));
  }
}
