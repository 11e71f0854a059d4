package dev.agentsandbox.server.http;

import dev.agentsandbox.server.governance.GovernanceMetrics;
import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.Map;

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
