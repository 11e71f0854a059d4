package dev.agentsandbox.relay;

import dev.agentsandbox.steprunner.RunnerBinary;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;

/**
 * A session's pod on loopback, as real processes: the step runner's binary listening for its one
 * connection on a loopback port, and the relay as its own JVM ({@link RelayMain}, as the sidecar
 * runs it) in front of it, started with the pin of a control-plane identity made here. Its log is
 * kept line by line; the ready line's pin is what a client must accept.
 */
final class LocalRelay implements AutoCloseable {
  static final Duration START = Duration.ofSeconds(90);

  final Path workspace;
  final RelayIdentity client;
  final int port;
  final int runnerPort;
  final Process runner;
  final Process relay;
  final List<String> log;
  final StringBuffer runnerErrors;
  final StringBuffer relayErrors;
  final CertificatePin relayPin;

  private LocalRelay(
      Path workspace,
      RelayIdentity client,
      int port,
      int runnerPort,
      Process runner,
      Process relay,
      CertificatePin relayPin,
      List<String> log,
      StringBuffer runnerErrors,
      StringBuffer relayErrors) {
    this.workspace = workspace;
    this.client = client;
    this.port = port;
    this.runnerPort = runnerPort;
    this.runner = runner;
    this.relay = relay;
    this.relayPin = relayPin;
    this.log = log;
    this.runnerErrors = runnerErrors;
    this.relayErrors = relayErrors;
  }

  static int freePort() throws IOException {
    try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return socket.getLocalPort();
    }
  }

  static Process startRunner(Path dir, Path workspace, int port) throws IOException {
    Path bin = Files.createDirectories(dir.resolve("bin"));
    ProcessBuilder builder =
        new ProcessBuilder(
            RunnerBinary.extractTo(bin).toString(),
            "--workspace",
            workspace.toString(),
            "--listen",
            "127.0.0.1:" + port);
    builder.environment().clear();
    builder.environment().put("PATH", "/usr/local/bin:/usr/bin:/bin");
    builder.redirectOutput(ProcessBuilder.Redirect.DISCARD);
    return builder.start();
  }

  /** The relay as the sidecar runs it, in a JVM of its own on this test's class path. */
  static ProcessBuilder relayProcess(List<String> args) {
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    command.addAll(List.of("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto"));
    command.addAll(
        List.of("-cp", System.getProperty("java.class.path"), RelayMain.class.getName()));
    command.addAll(args);
    return new ProcessBuilder(command);
  }

  static List<String> args(int port, int runnerPort, CertificatePin client, Instant expiresAt) {
    return List.of(
        "--listen-address",
        "127.0.0.1",
        "--listen-port",
        Integer.toString(port),
        "--runner-port",
        Integer.toString(runnerPort),
        "--client-sha256",
        client.sha256(),
        "--run-id",
        "r1",
        "--expires-at",
        Long.toString(expiresAt.getEpochSecond()),
        "--handshake-timeout-seconds",
        "5");
  }

  static LocalRelay start(Path dir) throws Exception {
    Path workspace = Files.createDirectories(dir.resolve("workspace"));
    Instant expires = Instant.now().plus(Duration.ofHours(1));
    RelayIdentity client =
        RelayIdentity.generate(RelayIdentity.Role.CONTROL_PLANE, "r1", Instant.now(), expires);
    int port = freePort();
    int runnerPort = freePort();
    Process relay = relayProcess(args(port, runnerPort, client.pin(), expires)).start();
    Process runner;
    try {
      // The relay first, as the kubelet starts the native sidecar before the agent's container.
      runner = startRunner(dir, workspace, runnerPort);
    } catch (IOException e) {
      relay.destroyForcibly();
      throw e;
    }
    List<String> lines = new CopyOnWriteArrayList<>();
    StringBuffer relayErrors = new StringBuffer();
    StringBuffer runnerErrors = new StringBuffer();
    pump(relay.getInputStream(), lines::add);
    pump(relay.getErrorStream(), line -> relayErrors.append(line).append('\n'));
    pump(runner.getErrorStream(), line -> runnerErrors.append(line).append('\n'));
    try {
      Awaitility.await("the relay's ready line")
          .atMost(START)
          .pollInterval(Duration.ofMillis(20))
          .until(() -> !lines.isEmpty() || !relay.isAlive());
    } catch (RuntimeException e) {
      relay.destroyForcibly();
      runner.destroyForcibly();
      throw e;
    }
    CertificatePin pin =
        ReadyLine.parse(lines.isEmpty() ? "" : lines.get(0) + "\n")
            .orElseThrow(
                () -> {
                  relay.destroyForcibly();
                  runner.destroyForcibly();
                  return new AssertionError(
                      "the relay's first line is not a ready line: " + lines + " " + relayErrors);
                });
    return new LocalRelay(
        workspace, client, port, runnerPort, runner, relay, pin, lines, runnerErrors, relayErrors);
  }

  /** Lines of a stream, each to {@code sink}, on a thread of their own until it ends. */
  static void pump(InputStream in, java.util.function.Consumer<String> sink) {
    Thread.ofPlatform()
        .daemon()
        .start(
            () -> {
              try (BufferedReader reader =
                  new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = reader.readLine()) != null) {
                  sink.accept(line);
                }
              } catch (IOException e) {
                // The process ended.
              }
            });
  }

  InetSocketAddress address() {
    return new InetSocketAddress(InetAddress.getLoopbackAddress(), port);
  }

  /** The control plane's end, as the backend opens it. */
  RunnerSession connect() throws Exception {
    return RunnerSession.open(address(), client, relayPin);
  }

  /** Waits until the relay's log has a line starting with {@code prefix}. */
  void awaitLog(String prefix) {
    Awaitility.await("relay log line " + prefix)
        .atMost(Duration.ofSeconds(30))
        .pollInterval(Duration.ofMillis(20))
        .until(() -> log.stream().anyMatch(l -> l.startsWith(prefix)));
  }

  @Override
  public void close() throws InterruptedException {
    for (Process process : List.of(runner, relay)) {
      process.destroy();
      if (!process.waitFor(10, TimeUnit.SECONDS)) {
        process.destroyForcibly();
        process.waitFor(10, TimeUnit.SECONDS);
      }
    }
  }
}
