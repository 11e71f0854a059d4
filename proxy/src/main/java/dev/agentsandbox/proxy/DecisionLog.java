package dev.agentsandbox.proxy;

import dev.agentsandbox.policy.event.DecisionRecord;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Fans each decision out to the listeners and the metrics, marking the first allow per host. The
 * set of hosts seen is capped so a wildcard entry cannot grow it without bound; past the cap no
 * further allow is marked first (the audit then shows more allows, never fewer).
 *
 * <p>Thread-safe.
 */
final class DecisionLog {
  static final int MAX_TRACKED_HOSTS = 65_536;
  private static final Logger log = LoggerFactory.getLogger(DecisionLog.class);

  private final List<DecisionListener> listeners;
  private final ProxyMetrics metrics;
  private final Set<String> allowedHosts = ConcurrentHashMap.newKeySet();

  DecisionLog(List<DecisionListener> listeners, ProxyMetrics metrics) {
    this.listeners = List.copyOf(listeners);
    this.metrics = metrics;
  }

  void report(DecisionRecord record) {
    DecisionRecord marked = record;
    if (record.allowed()
        && allowedHosts.size() < MAX_TRACKED_HOSTS
        && allowedHosts.add(record.host())) {
      marked = record.asFirst();
    }
    metrics.decided(marked);
    for (DecisionListener listener : listeners) {
      try {
        listener.onDecision(marked);
      } catch (RuntimeException e) {
        // A broken listener must not take the connection (or the other listeners) down with it.
        log.warn("decision listener {} failed: {}", listener.getClass().getName(), e.toString());
      }
    }
  }
}
