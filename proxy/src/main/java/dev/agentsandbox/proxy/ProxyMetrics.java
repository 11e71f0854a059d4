package dev.agentsandbox.proxy;

import dev.agentsandbox.policy.event.DecisionRecord;
import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.Gauge;
import io.prometheus.metrics.model.registry.PrometheusRegistry;

/**
 * Prometheus metrics of one proxy. Label values come from closed sets (allow/deny, {@link
 * dev.agentsandbox.policy.net.Reason}, up/down), so cardinality is bounded whatever clients send.
 *
 * <p>Thread-safe.
 */
public final class ProxyMetrics {
  private final PrometheusRegistry registry = new PrometheusRegistry();
  private final Counter decisions =
      Counter.builder()
          .name("agent_sandbox_proxy_decisions_total")
          .help("Decisions on connection attempts, by decision and reason")
          .labelNames("decision", "reason")
          .register(registry);
  private final Gauge openTunnels =
      Gauge.builder()
          .name("agent_sandbox_proxy_open_tunnels")
          .help("CONNECT tunnels and forwarded HTTP requests currently open")
          .register(registry);
  private final Gauge openConnections =
      Gauge.builder()
          .name("agent_sandbox_proxy_open_connections")
          .help("Client connections currently open")
          .register(registry);
  private final Counter bytes =
      Counter.builder()
          .name("agent_sandbox_proxy_bytes_total")
          .help("Bytes relayed, up (client to upstream) and down (upstream to client)")
          .labelNames("direction")
          .register(registry);

  /** The registry to expose, e.g. on {@code --metrics}. */
  public PrometheusRegistry registry() {
    return registry;
  }

  void decided(DecisionRecord record) {
    decisions.labelValues(record.decision(), record.reason().wireName()).inc();
    if (record.bytesUp() > 0) {
      bytes.labelValues("up").inc(record.bytesUp());
    }
    if (record.bytesDown() > 0) {
      bytes.labelValues("down").inc(record.bytesDown());
    }
  }

  void tunnelOpened() {
    openTunnels.inc();
  }

  void tunnelClosed() {
    openTunnels.dec();
  }

  void connectionOpened() {
    openConnections.inc();
  }

  void connectionClosed() {
    openConnections.dec();
  }

  /** The number of decisions so far with this decision ("allow"/"deny") and reason wire name. */
  public long decisionCount(String decision, String reason) {
    return (long) decisions.labelValues(decision, reason).get();
  }

  /** The number of tunnels open now. */
  public long openTunnels() {
    return (long) openTunnels.get();
  }

  /** Client connections open now (accepted by the proxy and not yet closed). */
  public long openConnections() {
    return (long) openConnections.get();
  }
}
