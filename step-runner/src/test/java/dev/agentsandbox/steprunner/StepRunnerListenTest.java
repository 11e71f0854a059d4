package dev.agentsandbox.steprunner;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.agentsandbox.backend.session.StepEnd;
import dev.agentsandbox.backend.session.StepSpec;
import dev.agentsandbox.backend.session.WorkspacePath;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The runner on a loopback port (a Kubernetes pod's transport, behind its session relay): one
 * connection taken before the greeting, its listener closed at once, nothing but loopback accepted,
 * and SIGTERM stopping it with its steps.
 */
class StepRunnerListenTest {
  @TempDir Path dir;

  private static int freePort() throws IOException {
    try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return socket.getLocalPort();
    }
  }

  private Process start(String... options) throws IOException {
    Path bin = Files.createDirectories(dir.resolve("bin"));
    Path workspace = Files.createDirectories(dir.resolve("workspace"));
    List<String> command =
        new ArrayList<>(
            List.of(RunnerBinary.extractTo(bin).toString(), "--workspace", workspace.toString()));
    command.addAll(List.of(options));
    ProcessBuilder builder = new ProcessBuilder(command);
    builder.environment().clear();
    builder.environment().put("PATH", "/usr/local/bin:/usr/bin:/bin");
    builder.redirectOutput(ProcessBuilder.Redirect.DISCARD);
    builder.redirectError(dir.resolve("runner.err").toFile());
    return builder.start();
  }

  private static Socket connect(int port) {
    InetSocketAddress address = new InetSocketAddress(InetAddress.getLoopbackAddress(), port);
    Socket[] connected = new Socket[1];
    Awaitility.await("the runner listens on " + port)
        .atMost(Duration.ofSeconds(30))
        .pollInterval(Duration.ofMillis(20))
        .ignoreExceptions()
        .until(
            () -> {
              connected[0] = new Socket();
              connected[0].connect(address, 1000);
              return true;
            });
    return connected[0];
  }

  private static RunnerClient client(Socket socket, List<String> violations) throws Exception {
    OutputStream out = socket.getOutputStream();
    RunnerClient client =
        new RunnerClient(
            "the loopback runner",
            frame -> {
              out.write(frame);
              out.flush();
            },
            violations::add);
    InputStream in = socket.getInputStream();
    Thread.ofPlatform()
        .daemon()
        .start(
            () -> {
              byte[] buffer = new byte[16384];
              try {
                int n;
                while ((n = in.read(buffer)) > 0) {
                  client.receive(buffer, 0, n);
                }
              } catch (IOException e) {
                // The runner closed the stream.
              }
              client.ended();
            });
    client.awaitReady(Duration.ofSeconds(10));
    return client;
  }

  private static StepSpec step(int number, String script) {
    return new StepSpec(number, List.of("sh", "-c", script), Map.of(), WorkspacePath.root(), null);
  }

  @Test
  void itTakesOneConnectionAndThenNobodyCanConnect() throws Exception {
    int port = freePort();
    Process runner = start("--listen", "127.0.0.1:" + port);
    List<String> violations = new CopyOnWriteArrayList<>();
    try (Socket socket = connect(port)) {
      RunnerClient client = client(socket, violations);
      Recording output = new Recording();
      StepEnd end =
          client
              .exec(step(1, "echo hi"), output)
              .awaitEnd(Instant.now().plusSeconds(30))
              .orElseThrow();
      assertThat(end.exitStatus()).hasValue(0);
      assertThat(output.out()).isEqualTo("hi\n");
      // The listener was closed when the first connection was taken, before the greeting.
      assertThatThrownBy(
              () -> {
                try (Socket second = new Socket()) {
                  second.connect(
                      new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 2000);
                }
              })
          .isInstanceOf(ConnectException.class);
      // A step cannot take it either: nothing listens there any more.
      Recording refused = new Recording();
      StepEnd probe =
          client
              .exec(
                  new StepSpec(
                      2,
                      List.of("bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/" + port),
                      Map.of(),
                      WorkspacePath.root(),
                      null),
                  refused)
              .awaitEnd(Instant.now().plusSeconds(30))
              .orElseThrow();
      assertThat(probe.exitStatus()).hasValue(1);
      assertThat(refused.err()).contains("Connection refused");
      assertThat(violations).isEmpty();
      client.bye();
      assertThat(runner.waitFor(30, TimeUnit.SECONDS)).isTrue();
      assertThat(runner.exitValue()).isZero();
    } finally {
      runner.destroyForcibly();
    }
  }

  @ParameterizedTest(name = "--listen {0} is refused")
  @ValueSource(
      strings = {
        "0.0.0.0:7444",
        "10.42.0.7:7444",
        "[::]:7444",
        "localhost:7444",
        "127.0.0.1:0",
        "127.0.0.1:65536",
        "127.0.0.1:",
        "127.0.0.1:x",
        "7444"
      })
  void onlyALoopbackAddressWithAPortIsAccepted(String spec) throws Exception {
    Process runner = start("--listen", spec);
    assertThat(runner.waitFor(10, TimeUnit.SECONDS)).isTrue();
    assertThat(runner.exitValue()).as("usage error").isEqualTo(64);
  }

  @Test
  void listeningAndFileDescriptorsAreOneOrTheOther() throws Exception {
    Process runner = start("--in", "0", "--listen", "127.0.0.1:" + freePort());
    assertThat(runner.waitFor(10, TimeUnit.SECONDS)).isTrue();
    assertThat(runner.exitValue()).isEqualTo(64);
  }

  @Test
  void sigtermStopsTheRunnerAndTheStepsItRuns() throws Exception {
    int port = freePort();
    Process runner = start("--listen", "127.0.0.1:" + port);
    try (Socket socket = connect(port)) {
      RunnerClient client = client(socket, new CopyOnWriteArrayList<>());
      Path pid = dir.resolve("workspace/pid");
      client.exec(step(1, "echo $$ > pid; exec sleep 1000"), new Recording());
      Awaitility.await("the step wrote its pid")
          .atMost(Duration.ofSeconds(30))
          .until(() -> Files.exists(pid) && Files.readString(pid).endsWith("\n"));
      long stepPid = Long.parseLong(Files.readString(pid).strip());
      assertThat(ProcessHandle.of(stepPid)).isPresent();
      runner.destroy();
      assertThat(runner.waitFor(30, TimeUnit.SECONDS)).isTrue();
      assertThat(runner.exitValue()).isEqualTo(143);
      Awaitility.await("the step is gone with the runner")
          .atMost(Duration.ofSeconds(30))
          .until(() -> ProcessHandle.of(stepPid).map(h -> !h.isAlive()).orElse(true));
    } finally {
      runner.destroyForcibly();
    }
  }
}
