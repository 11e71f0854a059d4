package dev.agentsandbox.backend.microvm;

import static dev.agentsandbox.backend.microvm.MicroVmItSupport.SUITE;
import static dev.agentsandbox.backend.microvm.MicroVmItSupport.cleanUpAndAssertNothingLeft;
import static dev.agentsandbox.testing.ItRuns.noEgress;
import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import dev.agentsandbox.backend.Completion;
import dev.agentsandbox.testing.RecordingListener;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The default workload image's own tools inside a VM under emulation (issue 26, "also found":
 * busybox {@code wget -q -T 5 -O- http://notallowed.test/} died with SIGSEGV, exit 139, in the VM).
 * One VM runs busybox wget in three spellings, wget under busybox's {@code timeout} and curl
 * against a host the run may not reach, and copies its {@code /bin/busybox} out; the test then runs
 * that very binary on the host, through a loopback listener that answers as the proxy does (403),
 * with the same arguments. The cause is the binary, not the VM: Debian 12's static busybox 1.35 is
 * built without wget's time-out ({@code --timeout} is "unrecognized", the usage lists neither), yet
 * still parses {@code -T N} as a number and stores it through a null pointer: SIGSEGV before any
 * socket is opened, on the host as in the VM, under any CPU model. So the test asserts that each
 * spelling ends the same in the VM as on the host, and that wget without {@code -T}, bounded by
 * {@code timeout 5}, and curl get the proxy's 403 in the VM with the refusals recorded.
 */
class MicroVmWorkloadToolsIT {
  private static final Pattern SECTION =
      Pattern.compile("=== begin (\\S+)\\n(.*?)=== end \\1 status (\\d+)", Pattern.DOTALL);

  /** Each wget spelling, by name. */
  private static final Map<String, String> WGET =
      new LinkedHashMap<>(
          Map.of(
              "wget-long-timeout", "-q --timeout=5",
              "wget-no-timeout", "-q",
              "wget-short-timeout", "-q -T 5"));

  /** Not a spelling of wget's but the bound the image does have: busybox's timeout applet. */
  private static final String WGET_UNDER_TIMEOUT = "wget-under-timeout";

  private static MicroVmBackend backend;
  private static MicroVmSandbox sandbox;
  private static final RecordingListener OUT = new RecordingListener();
  private static Completion end;
  private static final Map<String, Integer> VM_STATUS = new LinkedHashMap<>();
  private static final Map<String, String> VM_OUTPUT = new LinkedHashMap<>();
  private static Path busybox;

  @BeforeAll
  static void runTheToolsInAVm() throws Exception {
    backend = MicroVmItSupport.requireBackend();
    StringBuilder script = new StringBuilder("cp /bin/busybox \"$AGENT_SANDBOX_OUT/busybox\"\n");
    for (Map.Entry<String, String> row : WGET.entrySet()) {
      section(script, row.getKey(), "wget " + row.getValue() + " -O- http://notallowed.test/");
    }
    section(script, WGET_UNDER_TIMEOUT, "timeout 5 wget -q -O- http://notallowed.test/");
    section(
        script,
        "curl",
        "curl -s -o /dev/null -w 'http %{http_code}\\n' --max-time 5 http://notallowed.test/");
    sandbox =
        (MicroVmSandbox)
            backend.launch(
                SUITE.spec(
                    SUITE.newRunId(),
                    List.of("sh", "-c", script.toString()),
                    noEgress(),
                    SUITE.smallCaps(),
                    Duration.ofMinutes(10)),
                OUT);
    end = sandbox.await(Instant.now().plus(Duration.ofMinutes(8)));
    Matcher m = SECTION.matcher(OUT.output());
    while (m.find()) {
      VM_OUTPUT.put(m.group(1), m.group(2));
      VM_STATUS.put(m.group(1), Integer.parseInt(m.group(3)));
    }
    // Named busybox: the binary picks its applet by the name it runs under.
    busybox = Files.createTempDirectory("asb-vm-busybox").resolve("busybox");
    try (InputStream outputs = sandbox.outputs().orElseThrow();
        TarArchiveInputStream tar = new TarArchiveInputStream(outputs)) {
      for (TarArchiveEntry e = tar.getNextEntry(); e != null; e = tar.getNextEntry()) {
        if (e.isFile() && e.getName().endsWith("busybox")) {
          Files.write(busybox, tar.readAllBytes());
        }
      }
    }
    Files.setPosixFilePermissions(busybox, PosixFilePermissions.fromString("rwx------"));
  }

  private static void section(StringBuilder script, String key, String command) {
    script
        .append("echo '=== begin ")
        .append(key)
        .append("'\n(")
        .append(command)
        .append(") 2>&1\necho \"=== end ")
        .append(key)
        .append(" status $?\"\n");
  }

  @AfterAll
  static void tearDown() throws Exception {
    if (sandbox != null) {
      sandbox.teardown();
    }
    if (busybox != null) {
      Files.deleteIfExists(busybox);
      Files.deleteIfExists(busybox.getParent());
    }
    if (backend != null) {
      cleanUpAndAssertNothingLeft(backend);
    }
  }

  @Test
  void theVmRanEveryRowAndCopiedItsBusyboxOut() {
    assertThat(end.end()).as(end + " " + OUT.output()).isEqualTo(Completion.End.EXIT);
    assertThat(VM_STATUS.keySet())
        .as(OUT.output())
        .containsExactlyInAnyOrder(
            "wget-long-timeout",
            "wget-no-timeout",
            "wget-short-timeout",
            WGET_UNDER_TIMEOUT,
            "curl");
    assertThat(busybox.toFile().length()).as("the VM's /bin/busybox").isGreaterThan(100_000);
  }

  @Test
  void wgetWithoutTheTimeOutOptionsAndCurlGetTheProxysRefusalInTheVm() {
    for (String key : List.of("wget-no-timeout", WGET_UNDER_TIMEOUT)) {
      assertThat(VM_STATUS.get(key)).as(key + ": " + VM_OUTPUT.get(key)).isEqualTo(1);
      assertThat(VM_OUTPUT.get(key)).as(key).contains("server returned error").contains("403");
    }
    assertThat(VM_OUTPUT.get("curl")).as("curl").contains("http 403");
    assertThat(VM_STATUS.get("curl")).as("curl").isZero();
    // Three refusals reached the proxy (two wget, curl); --timeout and -T never sent a request.
    assertThat(OUT.decisions.stream().filter(d -> d.contains("notallowed.test")).count())
        .as("the proxy's decisions: " + OUT.decisions)
        .isEqualTo(3);
  }

  @Test
  void eachWgetSpellingEndsInTheVmAsTheSameBinaryDoesOnTheHost() throws Exception {
    HttpServer proxy =
        HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    proxy.createContext(
        "/",
        exchange -> {
          byte[] body = "{\"error\":\"egress_denied\"}\n".getBytes(StandardCharsets.UTF_8);
          exchange.sendResponseHeaders(403, body.length);
          exchange.getResponseBody().write(body);
          exchange.close();
        });
    proxy.start();
    try {
      String proxyUrl = "http://127.0.0.1:" + proxy.getAddress().getPort();
      Map<String, Integer> host = new LinkedHashMap<>();
      for (Map.Entry<String, String> row : WGET.entrySet()) {
        List<String> command = new ArrayList<>(List.of(busybox.toString(), "wget"));
        command.addAll(List.of(row.getValue().split(" ")));
        command.addAll(List.of("-O-", "http://notallowed.test/"));
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
        builder.environment().put("http_proxy", proxyUrl);
        Process process = builder.start();
        process.getInputStream().readAllBytes();
        if (!process.waitFor(30, TimeUnit.SECONDS)) {
          process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
        host.put(row.getKey(), process.exitValue());
      }
      Map<String, Integer> vm = new LinkedHashMap<>();
      WGET.keySet().forEach(k -> vm.put(k, VM_STATUS.get(k)));
      System.out.println(
          "MicroVmWorkloadToolsIT: exit statuses in the VM " + vm + ", on the host " + host);
      assertThat(vm).as("in the VM, against the host " + host).isEqualTo(host);
    } finally {
      proxy.stop(0);
    }
  }
}
