package dev.agentsandbox.server.session;

import static org.assertj.core.api.Assertions.fail;

import dev.agentsandbox.backend.Probe;
import dev.agentsandbox.backend.microvm.MicroVmBackend;
import dev.agentsandbox.backend.microvm.MicroVmConfig;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;

/**
 * {@link SessionEndToEndContract} on the microVM backend (QEMU under TCG here, or what {@code
 * AGENT_SANDBOX_MICROVM_ACCEL} names), whose guest runs the step runner; its proxy is the proxy's
 * jar. Fails, never skips, on a host that cannot run it.
 */
class SessionMicroVmIT extends SessionEndToEndContract {
  private static MicroVmConfig config;

  @BeforeAll
  static void startOnMicroVm() throws Exception {
    Path proxyJar = Path.of("..", "proxy", "target", "agent-sandbox-proxy.jar");
    if (!Files.isReadable(proxyJar)) {
      fail("SessionMicroVmIT needs the proxy's jar " + proxyJar + " (./mvnw -pl proxy package)");
    }
    String java = ProcessHandle.current().info().command().orElse("java");
    config =
        MicroVmConfig.defaults(
                List.of(
                    java,
                    "-Xmx64m",
                    "-XX:+UseSerialGC",
                    "-XX:TieredStopAtLevel=1",
                    "-jar",
                    proxyJar.toAbsolutePath().normalize().toString()))
            .toBuilder()
            .accel(System.getenv().getOrDefault("AGENT_SANDBOX_MICROVM_ACCEL", "tcg"))
            .build();
    MicroVmBackend backend = new MicroVmBackend(config);
    Probe probe = backend.probe();
    if (!probe.available()) {
      fail("SessionMicroVmIT needs QEMU, a guest kernel, nftables and taps: " + probe.detail());
    }
    // Under software emulation a python3 step takes seconds: the session gets half an hour.
    start(backend, SessionMicroVmIT::leftOf, 1800);
  }

  /** The microVM objects of a run: its directory, its tap, its fence elements. */
  static List<String> leftOf(String runId) {
    List<String> found = new ArrayList<>();
    Path dir = config.runDir().resolve(runId);
    if (Files.exists(dir)) {
      found.add("run directory " + dir);
    }
    try (Stream<Path> links = Files.list(Path.of("/sys/class/net"))) {
      for (Path link : links.toList()) {
        Path alias = link.resolve("ifalias");
        if (Files.isReadable(alias) && Files.readString(alias).contains("run=" + runId)) {
          found.add("tap " + link.getFileName());
        }
      }
      Process nft = new ProcessBuilder("nft", "list", "table", "inet", "agent_sandbox").start();
      String table = new String(nft.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      nft.waitFor();
      if (table.contains("run " + runId)) {
        found.add("nftables elements of run " + runId);
      }
    } catch (IOException e) {
      found.add("could not look: " + e.getMessage());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      found.add("interrupted");
    }
    return found;
  }
}
