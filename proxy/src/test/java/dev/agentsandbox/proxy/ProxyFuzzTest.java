package dev.agentsandbox.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.api.BugDetectors;
import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.agentsandbox.policy.AllowEntry;
import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.event.DecisionRecord;
import dev.agentsandbox.policy.net.AddressPolicy;
import dev.agentsandbox.policy.net.EgressDecider;
import dev.agentsandbox.policy.net.InternalRanges;
import dev.agentsandbox.policy.net.Reason;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiPredicate;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * Coverage-guided fuzzing of the proxy (Jazzer), with properties rather than only "no exception":
 *
 * <ul>
 *   <li>any bytes sent as a request to the real proxy on loopback (request head, absolute-form and
 *       CONNECT parsing, the decision, the dial) never reach a refused host: the trap upstream on
 *       the refused address sees nothing, the resolver is asked only for names the allow-list
 *       covers, and every allowed attempt went to the one permitted address;
 *   <li>any bytes at the start of a tunnel to port 443 pass the ClientHello/SNI guard only when
 *       they name the CONNECT target.
 * </ul>
 *
 * Without {@code JAZZER_FUZZ} these run as regression tests over the inputs kept under {@code
 * src/test/resources/dev/agentsandbox/proxy/ProxyFuzzTestInputs/<method>/} (seeds and every crash
 * found); scripts/fuzz.sh fuzzes each one for a bounded time. Every address in the fixture's hosts
 * table is on loopback, so the only way this test could send traffic elsewhere is an address
 * literal the policy failed to refuse, which is the bug it looks for.
 */
class ProxyFuzzTest {
  /**
   * How long each target fuzzes when {@code JAZZER_FUZZ} is set and scripts/fuzz.sh gives no
   * shorter bound (a constant: Error Prone 2.45 crashes on a string literal in this annotation).
   */
  static final String FUZZ_TIME = "30s";

  private static Fixture fixture;
  private static RecordingResolver resolver;
  private static RecordingListener decisions;
  private static ProxyServer proxy;
  private static List<AllowEntry> allowed;

  @BeforeAll
  static void start() throws Exception {
    fixture = new Fixture();
    resolver = new RecordingResolver(new StaticHostResolver(fixture.hosts));
    decisions = new RecordingListener();
    Limits limits =
        new Limits(
            Limits.DEFAULTS.connectTimeout(),
            Limits.DEFAULTS.dnsTimeout(),
            java.time.Duration.ofSeconds(2),
            Limits.DEFAULTS.maxLifetime(),
            Limits.DEFAULTS.maxConnections(),
            Limits.DEFAULTS.maxHeaderBytes(),
            Limits.DEFAULTS.ioThreads());
    proxy =
        ProxyServer.start(fixture.config(limits), resolver, List.of(decisions), new ProxyMetrics());
    allowed = AllowList.parse(fixture.allow()).entries();
  }

  @AfterAll
  static void stop() {
    if (proxy != null) {
      proxy.close();
    }
    if (fixture != null) {
      fixture.close();
    }
  }

  /** Only connections to loopback: every address in the fixture is there. */
  private static final BiPredicate<String, Integer> LOOPBACK_ONLY =
      (host, port) -> onLoopback(host);

  /**
   * While fuzzing, Jazzer's network hook stops any connection to an address off loopback before it
   * is made, and reports it: the property holds even if the proxy were wrong. Set at the start of
   * every input, as Jazzer's documentation asks, and not in {@code @BeforeAll}: Jazzer's agent is
   * attached only when the first fuzz test starts, after {@code @BeforeAll}, and {@link
   * BugDetectors} finds the hook's switch only if it is first loaded after that (loaded earlier it
   * fails with "Failed to set sanitizer variable"); Jazzer also resets the switch between the kept
   * inputs and the fuzzing. It is left set after each input (not closed): the proxy's event loop
   * may still dial for an input after the test method returned, and must meet the same rule. The
   * hook exists only while fuzzing (regression runs load no bug detectors).
   */
  private static void loopbackOnlyWhileFuzzing() {
    String fuzzing = System.getenv("JAZZER_FUZZ");
    if (fuzzing != null && !fuzzing.isEmpty()) {
      BugDetectors.allowNetworkConnections(LOOPBACK_ONLY);
    }
  }

  @FuzzTest(maxDuration = FUZZ_TIME)
  void noRequestReachesARefusedHost(byte[] request) throws IOException {
    loopbackOnlyWhileFuzzing();
    InetSocketAddress at = proxy.boundAddress();
    try (Socket socket = new Socket(at.getAddress(), at.getPort())) {
      socket.setSoTimeout(3_000);
      OutputStream out = socket.getOutputStream();
      out.write(request);
      out.flush();
      socket.shutdownOutput();
      drain(socket.getInputStream());
    } catch (IOException refusedOrReset) {
      // The proxy may close on malformed input before it read everything: that is an answer too.
    }
    assertThat(fixture.trap.seen()).as("requests at the trap on the refused address").isEmpty();
    for (String name : resolver.lookups()) {
      assertThat(allowed.stream().anyMatch(entry -> entry.matchesHost(name)))
          .as("the resolver was asked for %s, which no allow-list entry covers", name)
          .isTrue();
    }
    for (DecisionRecord record : decisions.records()) {
      if (record.allowed() && record.address() != null) {
        assertThat(record.address())
            .as("address of the allowed attempt to %s", record.host())
            .isEqualTo(Fixture.PERMITTED);
      }
    }
  }

  private static ProxyContext guardContext(RecordingListener guardDecisions) {
    return new ProxyContext(
        new EgressDecider(AllowList.EMPTY, Optional.empty()),
        new AddressPolicy(InternalRanges.NONE, Set.of(), new InetSocketAddress("127.0.0.1", 3128)),
        new StaticHostResolver(Map.of()),
        new DecisionLog(List.of(guardDecisions), new ProxyMetrics()),
        new ProxyMetrics(),
        Limits.DEFAULTS,
        "fuzz",
        new AtomicInteger(),
        Connector.TCP);
  }

  @FuzzTest(maxDuration = FUZZ_TIME)
  void theSniGuardPassesOnlyAHelloNamingTheTarget(byte[] firstBytes) {
    EmbeddedChannel upstream = new EmbeddedChannel();
    RecordingListener guardDecisions = new RecordingListener();
    Attempt attempt = new Attempt(guardContext(guardDecisions), "c", "CONNECT", "api.test", 443);
    SniGuard guard = new SniGuard(upstream, attempt, true, 10_000);
    EmbeddedChannel client = new EmbeddedChannel(guard);
    try {
      client.writeInbound(Unpooled.wrappedBuffer(firstBytes));
      client.runPendingTasks();
      client.checkException();
      boolean passed = client.isOpen() && client.pipeline().get(SniGuard.class) == null;
      if (passed) {
        assertThat(new String(firstBytes, StandardCharsets.ISO_8859_1))
            .as("a tunnel the guard let through names its target")
            .containsIgnoringCase("api.test");
        assertThat(guardDecisions.records()).as("decisions of a tunnel let through").isEmpty();
      } else if (!client.isOpen()) {
        assertThat(guardDecisions.records())
            .singleElement()
            .extracting(DecisionRecord::reason)
            .isIn(Reason.SNI_MISSING, Reason.SNI_MISMATCH);
      }
    } finally {
      client.finishAndReleaseAll();
      upstream.finishAndReleaseAll();
    }
  }

  private static boolean onLoopback(String host) {
    return host.equals("localhost")
        || host.startsWith("127.")
        || host.equals("::1")
        || host.equals("0:0:0:0:0:0:0:1")
        || host.equals("[::1]");
  }

  private static void drain(InputStream in) throws IOException {
    byte[] chunk = new byte[8192];
    try {
      while (in.read(chunk) >= 0) {
        // read until the proxy closes
      }
    } catch (SocketTimeoutException e) {
      // An allowed tunnel or kept-alive answer may stay open; the checks above do not need it.
    }
  }
}
