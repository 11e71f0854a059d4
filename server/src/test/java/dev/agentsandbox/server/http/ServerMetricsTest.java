package dev.agentsandbox.server.http;

import static org.assertj.core.api.Assertions.assertThat;

import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The proxy pool's metrics as a scrape shows them, read from the pool's counts at scrape time. */
class ServerMetricsTest {
  @Test
  void theProxyPoolsCountsAreReadWhenScraped() throws Exception {
    ServerMetrics metrics = new ServerMetrics(new PrometheusRegistry());
    Map<String, Long> counts = new LinkedHashMap<>();
    counts.put("ready", 2L);
    counts.put("created", 5L);
    counts.put("taken", 3L);
    counts.put("failed", 1L);
    counts.put("expired", 0L);
    metrics.proxyPool(() -> counts);

    String text = new String(metrics.scrape().body(), StandardCharsets.UTF_8);
    assertThat(text)
        .contains("agent_sandbox_proxy_pool_ready 2.0")
        .contains("agent_sandbox_proxy_pool_standbys_total{event=\"created\"} 5.0")
        .contains("agent_sandbox_proxy_pool_standbys_total{event=\"taken\"} 3.0")
        .contains("agent_sandbox_proxy_pool_standbys_total{event=\"failed\"} 1.0")
        .contains("agent_sandbox_proxy_pool_standbys_total{event=\"expired\"} 0.0")
        .doesNotContain("event=\"ready\"");

    counts.put("ready", 1L);
    counts.put("taken", 4L);
    text = new String(metrics.scrape().body(), StandardCharsets.UTF_8);
    assertThat(text)
        .contains("agent_sandbox_proxy_pool_ready 1.0")
        .contains("agent_sandbox_proxy_pool_standbys_total{event=\"taken\"} 4.0");
  }

  /**
   * {@code /metrics} answers without a token: it must not say which agents this installation runs.
   * The warm pool is counted per state, summed over agents.
   */
  @Test
  void theWarmPoolIsCountedWithoutNamingAnyAgent() throws Exception {
    ServerMetrics metrics = new ServerMetrics(new PrometheusRegistry());
    Map<String, Map<String, Integer>> warm = new LinkedHashMap<>();
    warm.put("payroll-exporter", Map.of("ready", 2, "preparing", 1));
    warm.put("incident-bot", Map.of("ready", 1));
    metrics.warmPool(() -> warm, () -> Map.of("handed_over", 4L));

    String text = new String(metrics.scrape().body(), StandardCharsets.UTF_8);
    assertThat(text)
        .contains("agent_sandbox_warm_sandboxes{state=\"ready\"} 3.0")
        .contains("agent_sandbox_warm_sandboxes{state=\"preparing\"} 1.0")
        .contains("agent_sandbox_warm_sandboxes_ended_total{outcome=\"handed_over\"} 4.0")
        .doesNotContain("payroll-exporter", "incident-bot", "agent=");
  }
}
