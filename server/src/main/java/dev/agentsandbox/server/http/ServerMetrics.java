package dev.agentsandbox.server.http;

import dev.agentsandbox.server.governance.GovernanceMetrics;
import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.CounterWithCallback;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.Map;
import java.util.function.Supplier;

/**
 * The control plane's metrics. Label values come from closed sets (route templates, status codes,
 * document keys, loosening kinds) so cardinality stays bounded whatever clients send.
 */
public final class ServerMetrics implements GovernanceMetrics {
  private final PrometheusRegistry registry;
  private final Counter requests;
  private final Counter configUpdates;
  private final Counter configRefusals;

  public ServerMetrics(PrometheusRegistry registry) {
    this.registry = registry;
    this.requests =
        Counter.builder()
            .name("agent_sandbox_http_requests_total")
            .help("Admin API requests by route template, method and status")
            .labelNames("route", "method", "status")
            .register(registry);
    this.configUpdates =
        Counter.builder()
            .name("agent_sandbox_config_updates_total")
            .help("Saved configuration changes by document and whether they loosened anything")
            .labelNames("config", "weakening")
            .register(registry);
    this.configRefusals =
        Counter.builder()
            .name("agent_sandbox_config_refusals_total")
            .help("Configuration changes refused by governance, by document")
            .labelNames("config")
            .register(registry);
  }

  /**
   * Exposes the warm pool: {@code agent_sandbox_warm_sandboxes{state}} (state {@code ready} or
   * {@code preparing}, summed over agents) and {@code
   * agent_sandbox_warm_sandboxes_ended_total{outcome}} (handed_over, drained, expired, shutdown,
   * failed), both read when scraped. No agent label: {@code /metrics} answers without a token, and
   * which agents an installation runs is for {@code agent_sandbox.read} holders (the runs and the
   * configuration say it to them).
   */
  public void warmPool(
      Supplier<Map<String, Map<String, Integer>>> counts, Supplier<Map<String, Long>> outcomes) {
    GaugeWithCallback.builder()
        .name("agent_sandbox_warm_sandboxes")
        .help("Warm sandboxes of every agent, ready for a run or being prepared")
        .labelNames("state")
        .callback(
            callback -> {
              Map<String, Integer> byState = new java.util.TreeMap<>();
              counts
                  .get()
                  .values()
                  .forEach(
                      states ->
                          states.forEach((state, n) -> byState.merge(state, n, Integer::sum)));
              byState.forEach((state, n) -> callback.call(n, state));
            })
        .register(registry);
    CounterWithCallback.builder()
        .name("agent_sandbox_warm_sandboxes_ended_total")
        .help("Warm sandboxes that left the pool since start, by outcome")
        .labelNames("outcome")
        .callback(callback -> outcomes.get().forEach((outcome, n) -> callback.call(n, outcome)))
        .register(registry);
  }

  /**
   * Exposes the Docker backend's proxy pool: {@code agent_sandbox_proxy_pool_ready} (standbys ready
   * now) and {@code agent_sandbox_proxy_pool_standbys_total{event}} (created, taken, failed,
   * expired, since start), read when scraped. Registered once, for the one Docker backend.
   */
  public void proxyPool(Supplier<Map<String, Long>> counts) {
    GaugeWithCallback.builder()
        .name("agent_sandbox_proxy_pool_ready")
        .help("Docker proxy-pool standbys started and awaiting a run")
        .callback(callback -> callback.call(counts.get().getOrDefault("ready", 0L)))
        .register(registry);
    CounterWithCallback.builder()
        .name("agent_sandbox_proxy_pool_standbys_total")
        .help(
            "Docker proxy-pool standbys since start, by event: created, taken by a run, failed to"
                + " create, expired (destroyed unused)")
        .labelNames("event")
        .callback(
            callback ->
                counts
                    .get()
                    .forEach(
                        (event, n) -> {
                          if (!event.equals("ready")) {
                            callback.call(n, event);
                          }
                        }))
        .register(registry);
  }

  public void request(String route, String method, int status) {
    requests.labelValues(route, method, Integer.toString(status)).inc();
  }

  @Override
  public void configUpdated(String config, boolean weakening) {
    configUpdates.labelValues(config, Boolean.toString(weakening)).inc();
  }

  @Override
  public void configRefused(String config) {
    configRefusals.labelValues(config).inc();
  }

  /** The Prometheus text exposition of every metric in the registry. */
  public Response scrape() throws IOException {
    PrometheusTextFormatWriter writer = PrometheusTextFormatWriter.create();
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    writer.write(out, registry.scrape());
    return new Response(200, writer.getContentType(), Map.of(), out.toByteArray());
  }
}
