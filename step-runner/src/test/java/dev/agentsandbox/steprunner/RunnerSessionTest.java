package dev.agentsandbox.steprunner;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.agentsandbox.backend.Completion;
import dev.agentsandbox.backend.session.PathInfo;
import dev.agentsandbox.backend.session.StepEnd;
import dev.agentsandbox.backend.session.StepSpec;
import dev.agentsandbox.backend.session.UnableToRunStepException;
import dev.agentsandbox.backend.session.WorkspacePath;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The forwarding every backend's session shares: each step and file operation reaches the session's
 * own runner while the session is open, and none reaches it once the session is over, refused with
 * the run's id and the backend's reason.
 */
class RunnerSessionTest {
  @TempDir Path dir;
  private LocalRunner local;

  @AfterEach
  void stop() throws Exception {
    if (local != null) {
      local.close();
      assertThat(local.violations).as("protocol violations").isEmpty();
    }
  }

  /** A session over the local runner; counts how often the runner was asked for. */
  private static final class Session extends RunnerSession {
    private final RunnerClient client;
    final AtomicInteger asked = new AtomicInteger();
    volatile String reason = "";

    Session(RunnerClient client) {
      this.client = client;
    }

    @Override
    protected RunnerClient runner() {
      asked.incrementAndGet();
      return client;
    }

    @Override
    protected String whyOver() {
      return reason;
    }

    void over() {
      markOver();
    }

    @Override
    public String runId() {
      return "run-7";
    }

    @Override
    public String runtime() {
      return "local";
    }

    @Override
    public Completion await(Instant deadline) {
      throw new UnsupportedOperationException();
    }

    @Override
    public void kill() {
      markOver();
    }

    @Override
    public void teardown() {
      markOver();
    }
  }

  @Test
  void everyOperationReachesTheRunnerWhileTheSessionIsOpen() throws Exception {
    local = LocalRunner.start(dir);
    Session session = new Session(local.client);
    WorkspacePath file = WorkspacePath.parse("/workspace/a/b.txt");

    byte[] content = "hello".getBytes(StandardCharsets.UTF_8);
    assertThat(session.putFile(file, new ByteArrayInputStream(content), 100)).isEqualTo(5);
    assertThat(Files.readString(local.workspace.resolve("a/b.txt"))).isEqualTo("hello");
    PathInfo info = session.stat(file);
    assertThat(info.size()).isEqualTo(5);
    assertThat(session.list(WorkspacePath.parse("/workspace/a"), 10))
        .extracting(PathInfo::path)
        .containsExactly(file);
    ByteArrayOutputStream read = new ByteArrayOutputStream();
    session.readFile(file, read, 100);
    assertThat(read.toString(StandardCharsets.UTF_8)).isEqualTo("hello");
    ByteArrayOutputStream tar = new ByteArrayOutputStream();
    assertThat(session.readFolder(WorkspacePath.parse("/workspace/a"), tar, 1000)).isEmpty();
    assertThat(tar.size()).isPositive();

    Recording output = new Recording();
    StepEnd end =
        session
            .exec(
                new StepSpec(
                    1, List.of("cat", "a/b.txt"), Map.of(), WorkspacePath.root(), new byte[0]),
                output)
            .awaitEnd(Instant.now().plusSeconds(20))
            .orElseThrow();
    assertThat(end.exitStatus()).hasValue(0);
    assertThat(output.out()).isEqualTo("hello");
    assertThat(session.asked).hasValue(6);
  }

  @Test
  void noOperationReachesTheRunnerOnceTheSessionIsOver() throws Exception {
    local = LocalRunner.start(dir);
    Session session = new Session(local.client);
    session.reason = "; the runner broke the protocol: a frame too long";
    session.over();
    WorkspacePath file = WorkspacePath.parse("/workspace/x");
    List<Consumer<Session>> operations =
        List.of(
            s ->
                s.exec(
                    new StepSpec(1, List.of("true"), Map.of(), WorkspacePath.root(), new byte[0]),
                    new Recording()),
            s -> s.putFile(file, new ByteArrayInputStream(new byte[1]), 10),
            s -> s.putArchive(WorkspacePath.root(), new ByteArrayInputStream(new byte[0]), 10),
            s -> s.stat(file),
            s -> s.list(WorkspacePath.root(), 10),
            s -> s.readFile(file, new ByteArrayOutputStream(), 10),
            s -> s.readFolder(WorkspacePath.root(), new ByteArrayOutputStream(), 10));
    for (Consumer<Session> operation : operations) {
      assertThatThrownBy(() -> operation.accept(session))
          .isInstanceOf(UnableToRunStepException.class)
          .hasMessage(
              "using the session of run run-7: it has ended (its sandbox is stopping or gone);"
                  + " the runner broke the protocol: a frame too long");
    }
    assertThat(session.asked).as("the runner was never asked for").hasValue(0);
    assertThat(local.workspace.resolve("x")).doesNotExist();
  }
}
