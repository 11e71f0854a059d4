package dev.agentsandbox.relay;

import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.backend.session.StepEnd;
import dev.agentsandbox.backend.session.StepSpec;
import dev.agentsandbox.backend.session.WorkspacePath;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What an observer on the pod network can do to a session's channel: change a record, send one
 * again, or replay a whole recorded session. TLS 1.3 authenticates every record with its sequence
 * number and every handshake with fresh keys on both sides, so each is refused: the changed or
 * repeated record never reaches the runner, the connection is cut (the session ends), and a replay
 * gets no further than the handshake.
 */
class RelayTamperTest {
  private static StepSpec step(int number, String script) {
    return new StepSpec(number, List.of("sh", "-c", script), Map.of(), WorkspacePath.root(), null);
  }

  private static Optional<StepEnd> run(RunnerSession session, StepSpec spec) {
    try {
      return session.client.exec(spec, new Recording()).awaitEnd(Instant.now().plusSeconds(30));
    } catch (RuntimeException e) {
      // The session may be cut while the step starts: that is what is being tested.
      return Optional.empty();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Optional.empty();
    }
  }

  @Test
  void aChangedRecordIsRefusedAndNeverReachesTheRunner(@TempDir Path dir) throws Exception {
    try (LocalRelay pod = LocalRelay.start(dir);
        TlsMitm mitm = new TlsMitm(pod.address());
        RunnerSession session = RunnerSession.open(mitm.address(), pod.client, pod.relayPin)) {
      assertThat(run(session, step(1, "true")).orElseThrow().exitStatus()).hasValue(0);
      mitm.flipNext();
      Optional<StepEnd> tampered = run(session, step(2, "touch tampered"));
      assertThat(mitm.touched()).isEqualTo(1);
      pod.awaitLog("agent-sandbox-relay session ended " + RelayEnd.RECORD_REFUSED.wireName());
      assertThat(pod.runner.waitFor(30, TimeUnit.SECONDS))
          .as("the runner stops when its channel is cut")
          .isTrue();
      assertThat(pod.workspace.resolve("tampered")).doesNotExist();
      assertThat(tampered.map(StepEnd::end)).isNotEqualTo(Optional.of(StepEnd.End.EXIT));
      Awaitility.await("the client sees its channel end")
          .atMost(Duration.ofSeconds(30))
          .until(() -> !session.ended.isEmpty());
    }
  }

  @Test
  void aRecordSentAgainIsRefusedAndTheStepRunsOnce(@TempDir Path dir) throws Exception {
    try (LocalRelay pod = LocalRelay.start(dir);
        TlsMitm mitm = new TlsMitm(pod.address());
        RunnerSession session = RunnerSession.open(mitm.address(), pod.client, pod.relayPin)) {
      Path count = pod.workspace.resolve("count");
      // The copy is sent only once the original's step has written its line.
      mitm.duplicateNext(() -> lines(count) == 1);
      run(session, step(1, "echo x >> count"));
      pod.awaitLog("agent-sandbox-relay session ended " + RelayEnd.RECORD_REFUSED.wireName());
      assertThat(mitm.touched()).isEqualTo(1);
      assertThat(pod.runner.waitFor(30, TimeUnit.SECONDS)).isTrue();
      assertThat(lines(count)).as("the step ran once").isEqualTo(1);
    }
  }

  private static long lines(Path file) {
    try {
      return Files.exists(file) ? Files.readAllLines(file).size() : 0;
    } catch (IOException e) {
      return -1;
    }
  }

  /**
   * The strongest replay: a whole recorded session sent to a second relay with the very same key
   * pair and the very same client pin, whose session is still untaken. Its handshake fails (the
   * relay's fresh key share makes the recorded client's Finished worthless), and its runner gets
   * nothing. Both relays run here in-process, since a relay process makes its own key.
   */
  @Test
  void aRecordedSessionReplayedToARelayWithTheSameKeyGetsNothing(@TempDir Path dir)
      throws Exception {
    Instant expires = Instant.now().plus(Duration.ofHours(1));
    RelayIdentity relayIdentity =
        RelayIdentity.generate(RelayIdentity.Role.RELAY, "r1", Instant.now(), expires);
    RelayIdentity client =
        RelayIdentity.generate(RelayIdentity.Role.CONTROL_PLANE, "r1", Instant.now(), expires);
    try (InProcess first = InProcess.start(dir.resolve("first"), relayIdentity, client);
        InProcess second = InProcess.start(dir.resolve("second"), relayIdentity, client)) {
      try (TlsMitm mitm = new TlsMitm(first.address());
          RunnerSession session = RunnerSession.open(mitm.address(), client, relayIdentity.pin())) {
        assertThat(run(session, step(1, "echo x >> count")).orElseThrow().exitStatus()).hasValue(0);
        byte[] recording = mitm.recorded();
        assertThat(recording.length).isGreaterThan(500);
        try (Socket replay = new Socket()) {
          replay.connect(second.address(), 5000);
          replay.setSoTimeout(15_000);
          replay.getOutputStream().write(recording);
          replay.getOutputStream().flush();
          replay.getInputStream().readAllBytes();
        } catch (IOException e) {
          // The relay cut the connection: expected.
        }
        Awaitility.await("the replay's refusal")
            .atMost(Duration.ofSeconds(30))
            .until(() -> !second.refusals.isEmpty());
        assertThat(second.refusals).containsExactly(RelayRefusal.HANDSHAKE_FAILED);
        assertThat(second.started).isZero();
        assertThat(second.workspace.resolve("count")).doesNotExist();
        assertThat(lines(first.workspace.resolve("count"))).isEqualTo(1);
      }
      // The second relay is untouched: its own control plane still gets its session.
      try (RunnerSession session =
          RunnerSession.open(second.address(), client, relayIdentity.pin())) {
        assertThat(run(session, step(1, "true")).orElseThrow().exitStatus()).hasValue(0);
      }
    }
  }

  /** A relay in this JVM, with a given identity, in front of a runner process of its own. */
  static final class InProcess implements AutoCloseable {
    final Path workspace;
    final Process runner;
    final SessionRelay relay;
    final int port;
    final List<RelayRefusal> refusals = new CopyOnWriteArrayList<>();
    volatile int started;

    private InProcess(Path workspace, Process runner, SessionRelay relay, int port) {
      this.workspace = workspace;
      this.runner = runner;
      this.relay = relay;
      this.port = port;
    }

    static InProcess start(Path dir, RelayIdentity identity, RelayIdentity client)
        throws Exception {
      Path workspace = Files.createDirectories(dir.resolve("workspace"));
      int port = LocalRelay.freePort();
      int runnerPort = LocalRelay.freePort();
      Process runner = LocalRelay.startRunner(dir, workspace, runnerPort);
      RelayOptions options =
          RelayOptions.parse(
              LocalRelay.args(port, runnerPort, client.pin(), Instant.now().plusSeconds(3600))
                  .toArray(String[]::new));
      InProcess[] self = new InProcess[1];
      SessionRelay.Events events =
          new SessionRelay.Events() {
            @Override
            public void ready(CertificatePin pin, InetSocketAddress address) {}

            @Override
            public void refused(RelayRefusal refusal) {
              self[0].refusals.add(refusal);
            }

            @Override
            public void started() {
              self[0].started++;
            }

            @Override
            public void ended(RelayEnd end) {}
          };
      SessionRelay relay = new SessionRelay(options, identity, events, Clock.systemUTC());
      self[0] = new InProcess(workspace, runner, relay, port);
      relay.start();
      Thread.ofPlatform().daemon().start(relay::serve);
      return self[0];
    }

    InetSocketAddress address() {
      return new InetSocketAddress(InetAddress.getLoopbackAddress(), port);
    }

    @Override
    public void close() throws InterruptedException {
      relay.close();
      runner.destroy();
      if (!runner.waitFor(10, TimeUnit.SECONDS)) {
        runner.destroyForcibly();
      }
    }
  }
}
