package dev.agentsandbox.backend.microvm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import dev.agentsandbox.backend.Probe;
import dev.agentsandbox.policy.config.Resources;
import dev.agentsandbox.testing.Host;
import dev.agentsandbox.testing.HostDrill;
import dev.agentsandbox.testing.ItRuns;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * What the microVM ITs share: the backend under software emulation (or what {@code
 * AGENT_SANDBOX_MICROVM_ACCEL} names), specs, and the check that nothing is left behind.
 */
final class MicroVmItSupport {
  static final String WORKLOAD_IMAGE = "agent-sandbox/workload:dev";

  /**
   * This backend's ITs: run ids {@code itvm…}, the workload image, small caps of Resources(1, 160,
   * 128).
   */
  static final ItRuns.Suite SUITE =
      new ItRuns.Suite("itvm", WORKLOAD_IMAGE, new Resources(1, 160, 128));

  static final Path PROXY_JAR = Path.of("..", "proxy", "target", "agent-sandbox-proxy.jar");

  /** The microVM tests' drill: its own links and upstream address, apart from the Docker tests'. */
  static final HostDrill.Layout DRILL =
      new HostDrill.Layout("asbm-up0", "asbm-meta0", "198.18.78.1", "0.0.0.0");

  private MicroVmItSupport() {}

  static HostDrill startDrill() throws IOException, InterruptedException {
    return HostDrill.start(DRILL);
  }

  static MicroVmConfig config() {
    String java = ProcessHandle.current().info().command().orElse("java");
    String accel = System.getenv().getOrDefault("AGENT_SANDBOX_MICROVM_ACCEL", "tcg");
    return MicroVmConfig.defaults(
            List.of(
                java,
                "-Xmx64m",
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                "-XX:-UsePerfData",
                "-jar",
                PROXY_JAR.toAbsolutePath().normalize().toString()))
        .toBuilder()
        .accel(accel)
        .build();
  }

  /** The backend, failing the test class loudly (never skipping) when this host cannot run it. */
  static MicroVmBackend requireBackend() {
    if (!Files.isReadable(PROXY_JAR)) {
      fail("The microVM ITs need the proxy's jar " + PROXY_JAR + " (./mvnw -pl proxy package)");
    }
    MicroVmBackend backend = new MicroVmBackend(config());
    Probe probe = backend.probe();
    if (!probe.available()) {
      fail("The microVM ITs need QEMU, a guest kernel, nftables and taps: " + probe.detail());
    }
    try {
      backend.files().imageId(WORKLOAD_IMAGE);
    } catch (RuntimeException e) {
      fail("The microVM ITs need image " + WORKLOAD_IMAGE + ": " + e.getMessage());
    }
    return backend;
  }

  /** Taps of this backend on the host. */
  static List<String> taps() {
    List<String> found = new ArrayList<>();
    try (var links = Files.list(Path.of("/sys/class/net"))) {
      links
          .map(p -> p.getFileName().toString())
          .filter(n -> n.startsWith(NftFence.TAP_PREFIX))
          .forEach(found::add);
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
    return found;
  }

  /** Taps whose alias names a test run. */
  static List<String> testTaps() throws java.io.IOException {
    return testTaps(SUITE.prefix());
  }

  /** Taps whose alias names a run whose id starts with {@code prefix}. */
  static List<String> testTaps(String prefix) throws java.io.IOException {
    List<String> found = new ArrayList<>();
    for (String tap : taps()) {
      Path alias = Path.of("/sys/class/net", tap, "ifalias");
      if (Files.exists(alias) && Files.readString(alias).contains("run=" + prefix)) {
        found.add(tap);
      }
    }
    return found;
  }

  /** The table's set elements that name a test run. */
  static String fenceElementsOfTests() throws Exception {
    return fenceElementsOfTests(SUITE.prefix());
  }

  static String fenceElementsOfTests(String prefix) throws Exception {
    String table = Host.output("nft", "list", "table", "inet", NftFence.TABLE);
    return table
        .lines()
        .filter(l -> l.contains("run " + prefix))
        .reduce("", (a, b) -> a + b + "\n");
  }

  /** Reaps every test run and asserts that no tap, element, directory or process remains. */
  static void cleanUpAndAssertNothingLeft(MicroVmBackend backend) throws Exception {
    cleanUpAndAssertNothingLeft(backend, SUITE.prefix());
  }

  /**
   * As {@link #cleanUpAndAssertNothingLeft(MicroVmBackend)}, for the runs whose ids start with
   * {@code prefix} only (so a suite leaves other suites' VMs on the same host alone).
   */
  static void cleanUpAndAssertNothingLeft(MicroVmBackend backend, String prefix) throws Exception {
    backend.reap(Instant.now(), runId -> !runId.startsWith(prefix));
    List<String> dirs = new ArrayList<>();
    if (Files.isDirectory(backend.config().runDir())) {
      try (var list = Files.list(backend.config().runDir())) {
        list.map(p -> p.getFileName().toString())
            .filter(n -> n.startsWith(prefix))
            .forEach(dirs::add);
      }
    }
    assertThat(dirs).as("run directories left behind").isEmpty();
    assertThat(testTaps(prefix)).as("taps left behind").isEmpty();
    assertThat(fenceElementsOfTests(prefix)).as("nftables elements left behind").isEmpty();
    assertThat(
            ProcessHandle.allProcesses()
                .filter(
                    p ->
                        p.info()
                            .arguments()
                            .map(a -> String.join(" ", a))
                            .orElse("")
                            .contains(backend.config().runDir() + "/" + prefix))
                .map(ProcessHandle::pid)
                .toList())
        .as("VMM or proxy processes left behind")
        .isEmpty();
  }
}
