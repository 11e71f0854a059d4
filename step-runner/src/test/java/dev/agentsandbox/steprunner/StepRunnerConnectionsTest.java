package dev.agentsandbox.steprunner;

import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.backend.session.Step;
import dev.agentsandbox.backend.session.StepEnd;
import dev.agentsandbox.backend.session.StepSpec;
import dev.agentsandbox.backend.session.WorkspacePath;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The count of TCP connections the sandbox opened while a step ran, as EXITED carries it: the
 * runner in a network namespace of its own (as in a sandbox, where nothing else shares it), its
 * loopback up and nothing listening, so every connection a step tries is refused at once and
 * counted.
 */
class StepRunnerConnectionsTest {
  @TempDir Path dir;
  private LocalRunner runner;
  private int number;

  @BeforeEach
  void start() throws Exception {
    runner =
        LocalRunner.startUnder(
            dir,
            List.of(
                "unshare", "--net", "--", "sh", "-c", "ip link set lo up && exec \"$0\" \"$@\""));
  }

  @AfterEach
  void stop() throws Exception {
    runner.close();
    assertThat(runner.violations).as("protocol violations").isEmpty();
  }

  private StepEnd run(String script) throws InterruptedException {
    Step step =
        runner.client.exec(
            new StepSpec(
                ++number, List.of("sh", "-c", script), Map.of(), WorkspacePath.root(), null),
            new Recording());
    return step.awaitEnd(Instant.now().plusSeconds(30)).orElseThrow();
  }

  @Test
  void aStepThatConnectsNowhereOpenedNone() throws Exception {
    StepEnd end = run("echo quiet; ls / > /dev/null");

    assertThat(end.exitStatus()).hasValue(0);
    assertThat(end.connectionsOpened()).hasValue(0);
  }

  @Test
  void everyConnectionAStepTriesIsCountedRefusedOrNot() throws Exception {
    StepEnd end =
        run(
            "python3 -c 'import socket\n"
                + "for port in (9, 10, 11):\n"
                + "    s = socket.socket()\n"
                + "    print(s.connect_ex((\"127.0.0.1\", port)))\n"
                + "    s.close()'");

    assertThat(end.exitStatus()).hasValue(0);
    assertThat(end.connectionsOpened()).hasValue(3);
  }

  @Test
  void theCountIsTheStepsOwnNotTheSessionsSoFar() throws Exception {
    run("python3 -c 'import socket; socket.socket().connect_ex((\"127.0.0.1\", 9))'");

    assertThat(run("true").connectionsOpened()).hasValue(0);
  }
}
