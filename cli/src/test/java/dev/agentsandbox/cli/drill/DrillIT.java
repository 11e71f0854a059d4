package dev.agentsandbox.cli.drill;

import static dev.agentsandbox.cli.drill.DrillItHost.assertNoMicroVmLeft;
import static dev.agentsandbox.cli.drill.DrillItHost.assertNothingLeft;
import static dev.agentsandbox.cli.drill.DrillItHost.check;
import static dev.agentsandbox.cli.drill.DrillItHost.run;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpServer;
import dev.agentsandbox.cli.CliProcess;
import java.io.IOException;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The drill as an operator runs it: the packaged jar's {@code drill} against a real {@code serve}
 * with the Docker backend, under runc and under gVisor. Every target the drill attacks is this
 * test's own: an "outside" server and a "metadata" server on addresses this test puts on a
 * port-less bridge of this host (198.18.0.0/15, the benchmarking range, and 169.254.169.254), and a
 * "host" server on this host's first address. Each counts the requests it gets: a drill that says
 * every layer held while a target was reached would be caught here. Then {@code drill verify}
 * checks the transcript against the audit log, and fails once a cited row's hash is changed.
 */
class DrillIT {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String OUTSIDE_ADDRESS = "198.18.83.1";
  private static final String METADATA_ADDRESS = "169.254.169.254";
  private static final String LINK = "asb-drill0";
  private static final Duration DRILL_LIMIT = Duration.ofMinutes(4);
  private static final String QEMU_TCG = "qemu-tcg";
  private static final long MICROVM_TTL_SECONDS = 120;
  private static final Duration MICROVM_DRILL_LIMIT = Duration.ofMinutes(8);

  /** The microVM backend's run directory (serve's default), where each live run has a folder. */
  private static final Path MICROVM_RUN_DIR = Path.of("/run/agent-sandbox/microvm");

  private static Path dir;
  private static HttpServer outside;
  private static HttpServer metadata;
  private static HttpServer host;
  private static String hostTarget;
  private static final AtomicInteger requests = new AtomicInteger();

  @BeforeAll
  static void targets() throws Exception {
    assertThat(CliProcess.JAR).as("the packaged CLI jar (failsafe runs after package)").exists();
    dir = Files.createTempDirectory("asb-drill-it");
    run("ip", "link", "del", LINK);
    if (run("ip", "link", "add", LINK, "type", "dummy") != 0) {
      check(run("ip", "link", "add", LINK, "type", "bridge"), "ip link add " + LINK);
    }
    check(run("ip", "addr", "add", OUTSIDE_ADDRESS + "/32", "dev", LINK), "ip addr add outside");
    check(run("ip", "addr", "add", METADATA_ADDRESS + "/32", "dev", LINK), "ip addr add metadata");
    check(run("ip", "link", "set", LINK, "up"), "ip link set up");
    outside = serve(OUTSIDE_ADDRESS, "outside reached");
    metadata = serve(METADATA_ADDRESS, "metadata-secret");
    String address = firstHostAddress();
    host = serve(address, "host service reached");
    hostTarget = address + ":" + host.getAddress().getPort();
  }

  @AfterAll
  static void removeTargets() throws Exception {
    for (HttpServer server : new HttpServer[] {outside, metadata, host}) {
      if (server != null) {
        server.stop(0);
      }
    }
    run("ip", "link", "del", LINK);
  }

  /** One control plane and the drill against it. */
  private static final class Side implements AutoCloseable {
    /** runc or runsc (the Docker backend), or qemu-tcg (the microVM backend under emulation). */
    final String runtime;

    final String backend;
    final Path data;
    final Process serve;
    final String base;
    final Path token;
    final Map<String, String> env;

    /** Where the drill writes its evidence: {@code --out}, or its default found once it ended. */
    Path out;

    /** Whether the drill was started without {@code --out}, in {@link #data} as its directory. */
    boolean defaultOut;

    CliProcess drill;
    Instant started;

    Side(String runtime, long ttlSeconds) throws Exception {
      this.runtime = runtime;
      this.backend = runtime.equals(QEMU_TCG) ? "microvm" : "docker";
      this.data = Files.createDirectories(dir.resolve(runtime));
      this.serve = serve(data, runtime);
      this.base = CliProcess.awaitListening(serve);
      this.token = data.resolve("admin-token");
      this.env =
          Map.of("AGENT_SANDBOX_CONFIG", data.resolve("cli.yaml").toString(), "NO_COLOR", "1");
      this.out = data.resolve("evidence");
      configure(env, base, token, data, backend, ttlSeconds);
    }

    void startDrill() throws IOException {
      started = Instant.now();
      List<String> args =
          new ArrayList<>(
              List.of(
                  "drill",
                  "--url",
                  base,
                  "--token-file",
                  token.toString(),
                  "--agent",
                  "drill",
                  "--backend",
                  backend,
                  "--outside",
                  OUTSIDE_ADDRESS + ":" + outside.getAddress().getPort(),
                  "--metadata",
                  METADATA_ADDRESS + ":" + metadata.getAddress().getPort(),
                  "--host-target",
                  hostTarget,
                  // A name only this test uses: Docker's resolver answers nothing else either, and
                  // no
                  // lookup may leave this host.
                  "--dns-name",
                  "drill-it.agent-sandbox.invalid",
                  "--secret-path",
                  data.toAbsolutePath().toString()));
      if (defaultOut) {
        drill = CliProcess.startIn(data, env, args.toArray(String[]::new));
      } else {
        args.addAll(List.of("--out", out.toString()));
        drill = CliProcess.start(env, args.toArray(String[]::new));
      }
    }

    /**
     * Once the drill has ended: without {@code --out} its evidence is in {@code ./drill-ID} of its
     * working directory, ID being the drill's own id, which its first line names.
     */
    void findEvidence() throws IOException {
      if (!defaultOut) {
        return;
      }
      String id =
          drill.errText().lines().filter(l -> l.startsWith("drill ")).findFirst().orElseThrow();
      id = id.substring("drill ".length(), id.indexOf(':'));
      out = data.resolve("drill-" + id);
      assertThat(out.resolve("drill.json")).as("the default --out, ./drill-ID").isRegularFile();
    }

    CliProcess cli(String... args) throws Exception {
      List<String> all = new ArrayList<>(List.of(args));
      all.addAll(List.of("--url", base, "--token-file", token.toString()));
      return CliProcess.run(env, "", Duration.ofSeconds(60), all.toArray(String[]::new));
    }

    @Override
    public void close() throws InterruptedException {
      if (drill != null) {
        drill.close();
      }
      serve.destroy();
      if (!serve.waitFor(60, TimeUnit.SECONDS)) {
        serve.destroyForcibly();
      }
    }
  }

  /**
   * Both drills run at once, each against its own control plane (one with runc, one with runsc on
   * the same daemon): a drill mostly waits (for connections to fail, for the deadline), so side by
   * side they take about as long as one.
   */
  @Test
  void underRuncAndGvisorEveryLayerHoldsTheTranscriptVerifiesAndATamperedOneDoesNot()
      throws Exception {
    try (Side runc = new Side("runc", 60);
        Side runsc = new Side("runsc", 60)) {
      // An agent whose allow-list names the host the drill calls unlisted is refused up front.
      CliProcess refused =
          runc.cli("drill", "--agent", "open", "--out", runc.data.resolve("refused").toString());
      assertThat(refused.await(Duration.ofSeconds(1))).as(refused.toString()).isEqualTo(1);
      assertThat(refused.errText()).contains("so the unlisted-host step would prove nothing");
      assertThat(runc.data.resolve("refused")).doesNotExist();

      // Without --out, the default ./drill-ID (the runc side); with it, the folder named.
      runc.defaultOut = true;
      runc.startDrill();
      runsc.startDrill();
      for (Side side : List.of(runc, runsc)) {
        awaitHeld(side, DRILL_LIMIT);
        side.findEvidence();
      }
      assertThat(requests.get()).as("requests that reached a target of the drill").isZero();
      for (Side side : List.of(runc, runsc)) {
        checkEvidence(side);
      }
    }
  }

  /**
   * The same drill on the microVM backend under software emulation (this host's KVM cannot run the
   * guest kernel): every step, the other-sandbox step included, on guests behind taps and the
   * nftables fence, with the host-side proxies. Two runs at a time (the default under emulation)
   * and a 120 s TTL: under TCG each guest needs seconds of CPU to boot, counted in its TTL
   * (docs/runs.md).
   */
  @Test
  void onTheMicroVmBackendUnderEmulationEveryLayerHoldsAndTheTranscriptVerifies() throws Exception {
    try (Side microvm = new Side(QEMU_TCG, MICROVM_TTL_SECONDS)) {
      microvm.startDrill();
      awaitHeld(microvm, MICROVM_DRILL_LIMIT);
      assertThat(requests.get()).as("requests that reached a target of the drill").isZero();
      checkEvidence(microvm);
    }
  }

  private static void awaitHeld(Side side, Duration limit) throws Exception {
    int exit = side.drill.await(limit);
    System.out.printf(
        "DrillIT %s: drill took %d s%n",
        side.runtime, Duration.between(side.started, Instant.now()).toSeconds());
    assertThat(exit).as(side.runtime + ": " + side.drill).isZero();
    assertThat(side.drill.outText()).contains("every layer held");
  }

  private static void checkEvidence(Side side) throws Exception {
    JsonNode transcript = JSON.readTree(side.out.resolve("drill.json").toFile());
    assertThat(transcript.path("verdict").asText()).isEqualTo("held");
    assertThat(transcript.path("versions").path("backend").asText()).isEqualTo(side.backend);
    assertThat(transcript.path("versions").path("runtime").asText()).isEqualTo(side.runtime);
    assertThat(transcript.path("configuration").path("version").asLong()).isPositive();
    List<String> names = new ArrayList<>();
    List<String> runIds = new ArrayList<>();
    for (JsonNode step : transcript.path("steps")) {
      names.add(step.path("name").asText());
      assertThat(step.path("verdict").asText()).as(step.toString()).isEqualTo("held");
      assertThat(step.path("checks")).isNotEmpty();
      assertThat(step.path("audit_row_ids")).as(step.path("name").asText()).isNotEmpty();
      if (step.path("observation").path("run_id").isTextual()) {
        runIds.add(step.path("observation").path("run_id").asText());
      }
      if (step.path("observation").path("peer").path("run_id").isTextual()) {
        runIds.add(step.path("observation").path("peer").path("run_id").asText());
      }
    }
    assertThat(names)
        .containsExactly(
            "unlisted-host-through-proxy",
            "direct-connect-without-proxy",
            "proxy-variables-overridden",
            "proxy-variables-through-api",
            "metadata-address",
            "host-and-gateway",
            "another-live-sandbox",
            "dns",
            "secrets",
            "privilege-escalation",
            "fork-bomb",
            "memory-exhaustion",
            "run-forever");
    // Eleven steps run a sandbox; the other-sandbox step runs two.
    assertThat(runIds).hasSize(13).doesNotHaveDuplicates();
    assertThat(step(transcript, "run-forever").path("observation").path("status").asText())
        .isEqualTo("deadline");
    JsonNode other = step(transcript, "another-live-sandbox").path("observation");
    assertThat(other.path("peer").path("status").asText()).isEqualTo("killed");
    assertThat(other.path("output").asText()).contains("drill: done=yes");
    // The target counted its own check (connection 1) and nothing else.
    assertThat(other.path("peer").path("output").asText())
        .contains("drill: connection=1", "drill: self-check=1", "drill: ready=yes")
        .doesNotContain("drill: connection=2");
    assertThat(transcript.path("audit_chain").path("head_hash").asText()).hasSize(64);
    assertThat(Files.readString(side.out.resolve("drill.md")))
        .contains("**Verdict: every layer held**")
        .contains("### fork-bomb: held");
    if (side.backend.equals("docker")) {
      assertNothingLeft(runIds);
    } else {
      assertNoMicroVmLeft(runIds, MICROVM_RUN_DIR);
    }

    CliProcess verified = side.cli("drill", "verify", side.out.resolve("drill.json").toString());
    assertThat(verified.await(Duration.ofSeconds(1))).as(verified.toString()).isZero();
    assertThat(verified.outText()).startsWith("ok: drill ");

    // One cited row's hash changed: verify must fail and name the row.
    ObjectNode tampered = (ObjectNode) JSON.readTree(side.out.resolve("drill.json").toFile());
    ObjectNode row =
        (ObjectNode) step(tampered, "run-forever").path("observation").path("audit").get(0);
    long rowId = row.path("id").asLong();
    row.put("hash", "0".repeat(64));
    Path forged = side.out.resolve("tampered.json");
    JSON.writeValue(forged.toFile(), tampered);
    CliProcess caught = side.cli("drill", "verify", forged.toString());
    assertThat(caught.await(Duration.ofSeconds(1))).as(caught.toString()).isEqualTo(1);
    assertThat(caught.errText()).contains("audit row " + rowId + ": hash differs");
  }

  private static JsonNode step(JsonNode transcript, String name) {
    for (JsonNode step : transcript.path("steps")) {
      if (step.path("name").asText().equals(name)) {
        return step;
      }
    }
    return fail("no step " + name);
  }

  private static void configure(
      Map<String, String> env, String base, Path token, Path data, String backend, long ttlSeconds)
      throws Exception {
    CliProcess login =
        CliProcess.run(
            env,
            "",
            Duration.ofSeconds(60),
            "login",
            "--url",
            base,
            "--token-file",
            token.toString(),
            "--name",
            "it");
    assertThat(login.await(Duration.ofSeconds(1))).as(login.toString()).isZero();
    Path config = data.resolve("sandbox.yaml");
    // The ttl: the run-forever step waits for it; the other steps must end well before it on a
    // busy 2-core machine (a memory hog under gVisor needs seconds to reach the cap, a guest under
    // TCG seconds to boot).
    Files.writeString(
        config,
        """
        enabled: true
        backend: %s
        agents:
          drill:
            allow: []
            image: agent-sandbox/workload:dev
            ttl_seconds: %d
            resources: {cpus: 1, memory_mb: 128, pids: 256}
          open:
            allow: [unlisted.drill.agent-sandbox.example]
            image: agent-sandbox/workload:dev
            ttl_seconds: 60
        version: 0
        """
            .formatted(backend, ttlSeconds));
    CliProcess apply =
        CliProcess.run(
            env,
            "",
            Duration.ofSeconds(60),
            "config",
            "apply",
            "-f",
            config.toString(),
            "--reason",
            "DrillIT");
    assertThat(apply.await(Duration.ofSeconds(1))).as(apply.toString()).isZero();
  }

  private static Process serve(Path data, String runtime) throws IOException {
    String java = ProcessHandle.current().info().command().orElse("java");
    return new ProcessBuilder(
            java,
            "--enable-native-access=ALL-UNNAMED",
            "-jar",
            CliProcess.JAR.toString(),
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--db",
            "jdbc:sqlite:" + data.resolve("store.db"),
            "--data-dir",
            data.toString(),
            "--microvm-accel",
            runtime.equals(QEMU_TCG) ? "tcg" : "off",
            // A runtime name the daemon lacks means runc.
            "--docker-gvisor-runtime",
            runtime.equals("runsc") ? "runsc" : "none-drill-it",
            "--instance-id",
            "drill-it-" + runtime + "-" + ProcessHandle.current().pid())
        .redirectErrorStream(true)
        .start();
  }

  private static HttpServer serve(String address, String body) throws IOException {
    HttpServer server =
        HttpServer.create(new InetSocketAddress(InetAddress.getByName(address), 0), 16);
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    server.createContext(
        "/",
        exchange -> {
          requests.incrementAndGet();
          exchange.sendResponseHeaders(200, bytes.length);
          exchange.getResponseBody().write(bytes);
          exchange.close();
        });
    server.start();
    return server;
  }

  private static String firstHostAddress() throws IOException {
    for (NetworkInterface nic : Collections.list(NetworkInterface.getNetworkInterfaces())) {
      if (nic.isLoopback() || !nic.isUp() || nic.getName().equals(LINK)) {
        continue;
      }
      for (InetAddress address : Collections.list(nic.getInetAddresses())) {
        if (address instanceof Inet4Address) {
          return address.getHostAddress();
        }
      }
    }
    return fail("this host has no IPv4 address but loopback");
  }
}
