package dev.agentsandbox.server.faults;

import static org.assertj.core.api.Assertions.fail;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.model.Info;
import com.github.dockerjava.api.model.RuntimeInfo;
import com.github.dockerjava.core.DefaultDockerClientConfig;
import com.github.dockerjava.core.DockerClientImpl;
import com.github.dockerjava.httpclient5.ApacheDockerHttpClient;
import dev.agentsandbox.backend.docker.DockerBackendConfig;
import dev.agentsandbox.backend.docker.DockerClients;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A Docker daemon of one test's own, so that a fault test can stop, restart or disturb its daemon
 * whatever else runs on the machine: the daemon {@code scripts/services/docker.sh} or {@code
 * scripts/serve.sh} started, or one its owner started, is never stopped, restarted or touched
 * beyond reading its runtimes and saving the images the test names (issue 26 item 19).
 *
 * <p>Everything it has is its own, under one directory ({@code /tmp/asb-it-dockerd-*}, mode 0700):
 * the API socket, the data root, the exec root (and so the containerd it starts and supervises),
 * the pid file, its configuration file (so the host's {@code /etc/docker/daemon.json} is not read)
 * and its log. Its containerd namespaces are named for it, it has no default bridge, it adds no
 * iptables rules and changes no sysctl (two daemons must not share those chains: the host's owns
 * them), and its networks come from an address pool ({@value #ADDRESS_POOL}) Docker's defaults do
 * not use. So its runs are not fenced by Docker's iptables rules: it is for tests whose workloads
 * only loop and print, never for a test of the fence. The gVisor runtime is registered under the
 * name and path the host's daemon has (scripts/install-host.sh registers it), so the backend's
 * probe and plans are the ones the host would give.
 *
 * <p>Only the process this class started is ever signalled, by its own handle.
 */
final class PrivateDockerd implements AutoCloseable {
  /** Where its networks' subnets come from: outside Docker's default pools and the project's. */
  static final String ADDRESS_POOL = "10.252.0.0/16";

  private static final Duration READY = Duration.ofSeconds(90);
  private static final Duration STOP = Duration.ofSeconds(90);
  private static final Duration LOAD = Duration.ofMinutes(5);

  private final String name;
  private final Path dir;
  private final Path socket;
  private final Path log;
  private final List<String> command;
  private final DockerClient client;
  private Process process;

  private PrivateDockerd(String name, Path dir, List<String> command) {
    this.name = name;
    this.dir = dir;
    this.socket = dir.resolve("docker.sock");
    this.log = dir.resolve("dockerd.log");
    this.command = List.copyOf(command);
    this.client = clientFor("unix://" + socket);
  }

  /**
   * Starts a daemon named for {@code test} and loads {@code images} into it from the host's daemon
   * ({@code DOCKER_HOST} or the default socket). Fails the test, with the daemon's last log lines,
   * when it cannot.
   */
  static PrivateDockerd start(String test, List<String> images) throws Exception {
    if (!"0".equals(output(List.of("id", "-u"), Duration.ofSeconds(10)).strip())) {
      fail(test + " starts a Docker daemon of its own, which needs root");
    }
    DockerClient host = DockerClients.fromEnvironment();
    Info info;
    try {
      info = host.infoCmd().exec();
    } catch (RuntimeException e) {
      throw new AssertionError(
          test
              + " copies its images from the host's Docker daemon: "
              + e.getMessage()
              + " (scripts/services/docker.sh start)",
          e);
    }
    Path dir = Files.createTempDirectory(Path.of("/tmp"), "asb-it-dockerd-");
    String id = dir.getFileName().toString().substring("asb-it-dockerd-".length());
    Map<String, Object> runtimes = new LinkedHashMap<>();
    String gvisor = DockerBackendConfig.defaults().gvisorRuntime();
    Map<String, RuntimeInfo> hostRuntimes =
        info.getRuntimes() == null ? Map.of() : info.getRuntimes();
    if (hostRuntimes.containsKey(gvisor)) {
      runtimes.put(gvisor, Map.of("path", hostRuntimes.get(gvisor).getPath()));
    }
    Path config = dir.resolve("daemon.json");
    Files.writeString(config, new ObjectMapper().writeValueAsString(Map.of("runtimes", runtimes)));
    List<String> command = new ArrayList<>();
    command.addAll(
        List.of(
            "dockerd",
            "--host",
            "unix://" + dir.resolve("docker.sock"),
            "--data-root",
            dir.resolve("data").toString(),
            "--exec-root",
            dir.resolve("exec").toString(),
            "--pidfile",
            dir.resolve("dockerd.pid").toString(),
            "--config-file",
            config.toString(),
            "--containerd-namespace",
            "asb-it-" + id,
            "--containerd-plugins-namespace",
            "asb-it-" + id + "-plugins",
            "--bridge",
            "none",
            "--iptables=false",
            "--ip6tables=false",
            "--ip-forward=false",
            "--ip-masq=false",
            "--userland-proxy=false",
            "--default-address-pool",
            "base=" + ADDRESS_POOL + ",size=24",
            "--log-level",
            "warn"));
    if (info.getDriver() != null && !info.getDriver().isBlank()) {
      command.addAll(List.of("--storage-driver", info.getDriver()));
    }
    PrivateDockerd dockerd = new PrivateDockerd(test, dir, command);
    try {
      dockerd.start();
      dockerd.load(images);
    } catch (Throwable t) {
      dockerd.close();
      throw t;
    }
    return dockerd;
  }

  /** A client for this daemon's socket (no response timeout, like {@link DockerClients}). */
  DockerClient client() {
    return client;
  }

  /** Starts the daemon (again, after {@link #stop}) on the same data root and waits for it. */
  void start() throws Exception {
    if (process != null && process.isAlive()) {
      throw new IllegalStateException(name + "'s dockerd already runs (pid " + process.pid() + ")");
    }
    process =
        new ProcessBuilder(command)
            .redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
            .start();
    long until = System.nanoTime() + READY.toNanos();
    while (System.nanoTime() < until) {
      if (!process.isAlive()) {
        fail(
            "starting "
                + name
                + "'s dockerd: it exited with status "
                + process.exitValue()
                + ": "
                + tail());
      }
      try {
        client.pingCmd().exec();
        return;
      } catch (RuntimeException e) {
        Thread.sleep(250);
      }
    }
    fail(
        "starting "
            + name
            + "'s dockerd: no answer on "
            + socket
            + " within "
            + READY
            + ": "
            + tail());
  }

  /**
   * Stops the daemon as a service manager would (SIGTERM to its own process, SIGKILL after {@link
   * #STOP}); live-restore is off, so it stops its containers as it goes.
   */
  void stop() throws InterruptedException {
    if (process == null || !process.isAlive()) {
      return;
    }
    process.destroy();
    if (!process.waitFor(STOP.toSeconds(), TimeUnit.SECONDS)) {
      process.destroyForcibly();
      process.waitFor(30, TimeUnit.SECONDS);
    }
  }

  boolean running() {
    return process != null && process.isAlive();
  }

  /** Removes what runs on it, stops it and deletes its directory; never throws. */
  @Override
  public void close() {
    try {
      if (running()) {
        client
            .listContainersCmd()
            .withShowAll(true)
            .exec()
            .forEach(c -> client.removeContainerCmd(c.getId()).withForce(true).exec());
      }
    } catch (RuntimeException e) {
      System.err.println(name + ": removing the private daemon's containers: " + e.getMessage());
    }
    try {
      stop();
      client.close();
      // The daemon unmounts its layers and network namespaces as it stops; whatever a killed one
      // left mounted under its directory is unmounted before the directory goes.
      List<String> mounts = new ArrayList<>();
      for (String line : Files.readAllLines(Path.of("/proc/self/mountinfo"))) {
        String[] fields = line.split(" ");
        if (fields.length > 4 && fields[4].startsWith(dir + "/")) {
          mounts.add(fields[4]);
        }
      }
      mounts.sort(Comparator.reverseOrder());
      for (String mount : mounts) {
        output(List.of("umount", "-l", mount), Duration.ofSeconds(30));
      }
      output(List.of("rm", "-rf", "--one-file-system", dir.toString()), Duration.ofMinutes(2));
    } catch (Exception e) {
      System.err.println(name + ": removing the private daemon " + dir + ": " + e.getMessage());
    }
  }

  private void load(List<String> images) throws Exception {
    List<String> pipeline = new ArrayList<>();
    pipeline.addAll(
        List.of(
            "bash",
            "-c",
            "set -o pipefail; docker save \"${@:2}\" | docker -H \"$1\" load -q",
            "load",
            "unix://" + socket));
    pipeline.addAll(images);
    Process load = new ProcessBuilder(pipeline).redirectErrorStream(true).start();
    String out = new String(load.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!load.waitFor(LOAD.toSeconds(), TimeUnit.SECONDS)) {
      load.destroyForcibly();
      fail("loading " + images + " into " + name + "'s dockerd: not done within " + LOAD);
    }
    if (load.exitValue() != 0) {
      fail(
          "loading "
              + images
              + " into "
              + name
              + "'s dockerd from the host's: "
              + out.strip()
              + " (images/build.sh builds them)");
    }
  }

  private String tail() {
    try {
      List<String> lines = Files.readAllLines(log);
      return String.join(" | ", lines.subList(Math.max(0, lines.size() - 10), lines.size()));
    } catch (IOException e) {
      return "(no log: " + e.getMessage() + ")";
    }
  }

  private static DockerClient clientFor(String host) {
    DefaultDockerClientConfig config =
        DefaultDockerClientConfig.createDefaultConfigBuilder().withDockerHost(host).build();
    ApacheDockerHttpClient http =
        new ApacheDockerHttpClient.Builder()
            .dockerHost(config.getDockerHost())
            .maxConnections(256)
            .connectionTimeout(Duration.ofSeconds(10))
            .build();
    return DockerClientImpl.getInstance(config, http);
  }

  private static String output(List<String> command, Duration bound) throws Exception {
    Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
    String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!process.waitFor(bound.toSeconds(), TimeUnit.SECONDS)) {
      process.destroyForcibly();
      throw new IOException(String.join(" ", command) + " did not end within " + bound);
    }
    return out;
  }
}
