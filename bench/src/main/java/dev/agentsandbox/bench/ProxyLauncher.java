package dev.agentsandbox.bench;

import dev.agentsandbox.policy.config.ProxyLines;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.Writer;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Starts one proxy under test with its generated configuration and times it to ready: our proxy to
 * its ready line on stderr, the peers (which print none) to their port accepting.
 */
final class ProxyLauncher {
  private static final long READY_TIMEOUT_MILLIS = 30_000;

  /** Where the pieces are and how to run them. */
  record Setup(
      Path workDir,
      Optional<Path> proxyJar,
      String javaCommand,
      List<String> javaOptions,
      String squid,
      String tinyproxy,
      Path pidLog) {
    Setup {
      javaOptions = List.copyOf(javaOptions);
    }
  }

  /** A started proxy; {@link #stop} ends it. */
  record RunningProxy(ProxyKind kind, Process process, int port, long startToReadyNanos) {
    long pid() {
      return process.pid();
    }

    InetSocketAddress address() {
      return new InetSocketAddress("127.0.0.1", port);
    }

    void stop() throws InterruptedException {
      process.destroy();
      if (!process.waitFor(10, TimeUnit.SECONDS)) {
        process.destroyForcibly();
        process.waitFor(10, TimeUnit.SECONDS);
      }
    }
  }

  private final Setup setup;
  private final Path hostsFile;

  ProxyLauncher(Setup setup) throws IOException {
    this.setup = setup;
    this.hostsFile = setup.workDir().resolve("hosts");
    Files.writeString(hostsFile, ComparedProxySetups.hostsFile(), StandardCharsets.US_ASCII);
    // squid and tinyproxy drop root for their own users (proxy, nobody) before they open their
    // logs, so those users need a directory they can write to and a path they can walk.
    Files.setPosixFilePermissions(setup.workDir(), PosixFilePermissions.fromString("rwxr-xr-x"));
    Path logs = Files.createDirectories(setup.workDir().resolve("logs"));
    Files.setPosixFilePermissions(logs, PosixFilePermissions.fromString("rwxrwxrwx"));
  }

  RunningProxy start(ProxyKind kind, int upstreamPort) throws IOException, InterruptedException {
    int port = freePort();
    Path dir = setup.workDir();
    Path log = dir.resolve(kind.label() + ".out");
    List<String> command = new ArrayList<>();
    switch (kind) {
      case AGENT_SANDBOX -> {
        Path jar =
            setup
                .proxyJar()
                .orElseThrow(
                    () ->
                        new IOException(
                            "starting agent-sandbox: no proxy jar given (build the proxy module"
                                + " or leave agent-sandbox out of --targets)"));
        command.add(setup.javaCommand());
        command.addAll(setup.javaOptions());
        command.addAll(List.of("-jar", jar.toString()));
        command.addAll(
            ComparedProxySetups.agentSandboxArguments(
                port, upstreamPort, hostsFile, dir.resolve("decisions.jsonl")));
      }
      case SQUID -> {
        Path conf = dir.resolve("squid.conf");
        Files.writeString(conf, ComparedProxySetups.squid(port, upstreamPort, dir, hostsFile));
        command.addAll(List.of(setup.squid(), "-N", "-f", conf.toString()));
      }
      case TINYPROXY -> {
        Path filter = dir.resolve("tinyproxy-filter");
        Files.writeString(filter, ComparedProxySetups.tinyproxyFilter(), StandardCharsets.US_ASCII);
        Path conf = dir.resolve("tinyproxy.conf");
        Files.writeString(conf, ComparedProxySetups.tinyproxy(port, upstreamPort, dir, filter));
        // A private mount namespace, so the bind mount never touches the machine's /etc/hosts;
        // exec keeps the PID, so the measured process is tinyproxy itself.
        command.addAll(
            List.of(
                "unshare",
                "--mount",
                "--propagation",
                "private",
                "--",
                "sh",
                "-c",
                "mount --bind \"$1\" /etc/hosts && exec \"$2\" -d -c \"$3\"",
                "sh",
                hostsFile.toString(),
                setup.tinyproxy(),
                conf.toString()));
      }
    }
    ProcessBuilder builder = new ProcessBuilder(command).redirectOutput(log.toFile());
    if (kind == ProxyKind.AGENT_SANDBOX) {
      builder.redirectError(ProcessBuilder.Redirect.PIPE);
    } else {
      builder.redirectErrorStream(true);
    }
    long spawn = System.nanoTime();
    Process process = builder.start();
    Files.writeString(
        setup.pidLog(), process.pid() + "\n", StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    try {
      long ready =
          kind == ProxyKind.AGENT_SANDBOX
              ? awaitReadyLine(process, dir.resolve(kind.label() + ".err"))
              : awaitAccepting(process, port);
      return new RunningProxy(kind, process, port, ready - spawn);
    } catch (IOException | RuntimeException | InterruptedException e) {
      process.destroyForcibly();
      throw e;
    }
  }

  /** Copies stderr to a file and returns the time the ready line arrived. */
  private static long awaitReadyLine(Process process, Path errLog)
      throws IOException, InterruptedException {
    CompletableFuture<Long> ready = new CompletableFuture<>();
    Writer copy = Files.newBufferedWriter(errLog, StandardCharsets.UTF_8);
    Thread.ofPlatform()
        .daemon()
        .name("proxy-stderr")
        .start(
            () -> {
              try (copy;
                  BufferedReader err =
                      new BufferedReader(
                          new InputStreamReader(
                              process.getErrorStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = err.readLine()) != null) {
                  if (!ready.isDone() && line.contains(ProxyLines.READY)) {
                    ready.complete(System.nanoTime());
                  }
                  copy.write(line);
                  copy.write('\n');
                  copy.flush();
                }
              } catch (IOException e) {
                ready.completeExceptionally(e);
              }
              ready.completeExceptionally(
                  new IOException(
                      "starting agent-sandbox: stderr ended before the ready line (see "
                          + errLog
                          + ")"));
            });
    try {
      return ready.get(READY_TIMEOUT_MILLIS, TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      throw new IOException(e.getCause().getMessage(), e.getCause());
    } catch (TimeoutException e) {
      throw new IOException(
          "starting agent-sandbox: no ready line within " + READY_TIMEOUT_MILLIS + " ms", e);
    }
  }

  /** Polls the port every millisecond until a TCP connect succeeds. */
  private static long awaitAccepting(Process process, int port)
      throws IOException, InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(READY_TIMEOUT_MILLIS);
    while (System.nanoTime() < deadline) {
      try (Socket probe = new Socket()) {
        probe.connect(new InetSocketAddress("127.0.0.1", port), 1000);
        return System.nanoTime();
      } catch (IOException notYet) {
        if (!process.isAlive()) {
          throw new IOException(
              "starting proxy on port "
                  + port
                  + ": it exited with status "
                  + process.exitValue()
                  + " before accepting (see its .out file in the work directory)",
              notYet);
        }
        Thread.sleep(1);
      }
    }
    throw new IOException(
        "starting proxy on port "
            + port
            + ": not accepting within "
            + READY_TIMEOUT_MILLIS
            + " ms");
  }

  /** An ephemeral loopback port that was free a moment ago (the proxies cannot take port 0). */
  static int freePort() throws IOException {
    try (ServerSocket socket = new ServerSocket()) {
      socket.bind(new InetSocketAddress("127.0.0.1", 0));
      return socket.getLocalPort();
    }
  }
}
