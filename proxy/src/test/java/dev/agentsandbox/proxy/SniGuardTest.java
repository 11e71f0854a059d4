package dev.agentsandbox.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.event.DecisionRecord;
import dev.agentsandbox.policy.net.AddressPolicy;
import dev.agentsandbox.policy.net.EgressDecider;
import dev.agentsandbox.policy.net.InternalRanges;
import dev.agentsandbox.policy.net.Reason;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The port-443 rule that needs no TLS server: a tunnel to 443 that does not start with a
 * ClientHello is refused, while a tunnel to a named port may carry any protocol. Runs the guard in
 * Netty's in-memory channel (the integration tests cover TLS clients on real sockets).
 */
class SniGuardTest {
  private final RecordingListener decisions = new RecordingListener();
  private final ProxyContext context =
      new ProxyContext(
          new EgressDecider(AllowList.EMPTY, Optional.empty()),
          new AddressPolicy(
              InternalRanges.NONE, Set.of(), new InetSocketAddress("127.0.0.1", 3128)),
          new StaticHostResolver(java.util.Map.of()),
          new DecisionLog(List.of(decisions), new ProxyMetrics()),
          new ProxyMetrics(),
          Limits.DEFAULTS,
          "run",
          new AtomicInteger(),
          Connector.TCP);

  @Test
  void plainBytesIntoA443TunnelAreRefusedAsSniMissing() {
    EmbeddedChannel upstream = new EmbeddedChannel();
    Attempt attempt = new Attempt(context, "c", "CONNECT", "api.test", 443);
    EmbeddedChannel client = new EmbeddedChannel(new SniGuard(upstream, attempt, true, 10_000));
    client.writeInbound(Unpooled.copiedBuffer("GET / HTTP/1.1\r\n\r\n", StandardCharsets.US_ASCII));
    client.runPendingTasks();
    assertThat(client.isOpen()).isFalse();
    assertThat(upstream.isOpen()).isFalse();
    assertThat(decisions.records())
        .singleElement()
        .extracting(DecisionRecord::reason)
        .isEqualTo(Reason.SNI_MISSING);
  }

  @Test
  void plainBytesIntoANamedPortTunnelPassUnchanged() {
    EmbeddedChannel upstream = new EmbeddedChannel();
    Attempt attempt = new Attempt(context, "c", "CONNECT", "db.test", 5432);
    EmbeddedChannel client = new EmbeddedChannel(new SniGuard(upstream, attempt, false, 10_000));
    client.writeInbound(Unpooled.copiedBuffer("hello db", StandardCharsets.US_ASCII));
    client.runPendingTasks();
    assertThat(client.isOpen()).isTrue();
    assertThat(decisions.records()).isEmpty();
    io.netty.buffer.ByteBuf passed = client.readInbound();
    assertThat(passed.toString(StandardCharsets.US_ASCII)).isEqualTo("hello db");
    passed.release();
    client.finishAndReleaseAll();
  }

  @Test
  void aSilentClientIsClosedWhenTheGuardTimesOut() {
    EmbeddedChannel upstream = new EmbeddedChannel();
    Attempt attempt = new Attempt(context, "c", "CONNECT", "api.test", 443);
    EmbeddedChannel client = new EmbeddedChannel(new SniGuard(upstream, attempt, true, 1_000));
    client.advanceTimeBy(2, java.util.concurrent.TimeUnit.SECONDS);
    client.runScheduledPendingTasks();
    assertThat(client.isOpen()).isFalse();
    assertThat(upstream.isOpen()).isFalse();
  }

  @Test
  void closingTheTunnelCancelsTheGuardTimerSoNothingKeepsTheTunnelReachable() {
    EmbeddedChannel upstream = new EmbeddedChannel();
    Attempt attempt = new Attempt(context, "c", "CONNECT", "api.test", 443);
    EmbeddedChannel client = new EmbeddedChannel(new SniGuard(upstream, attempt, true, 60_000));
    client.close();
    // -1: no scheduled task is left that would hold the closed channel for a minute.
    assertThat(client.runScheduledPendingTasks()).isEqualTo(-1);
  }
}
