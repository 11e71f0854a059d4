package dev.agentsandbox.backend.k8s;

import dev.agentsandbox.backend.Labels;
import dev.agentsandbox.backend.ReapReport;
import io.fabric8.kubernetes.api.model.Namespace;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

/**
 * Deletes sandbox namespaces whose expiry label has passed or whose run is over. It only ever looks
 * at namespaces named {@code agent-run-*} that carry the managed-by label, so nothing else on the
 * cluster is at risk.
 */
final class NamespaceReaper {
  private final KubernetesClient client;

  NamespaceReaper(KubernetesClient client) {
    this.client = client;
  }

  ReapReport reap(Instant now, Predicate<String> isLive) {
    List<String> removed = new ArrayList<>();
    List<String> problems = new ArrayList<>();
    List<Namespace> namespaces;
    try {
      namespaces =
          client.namespaces().withLabel(Labels.MANAGED_BY, Labels.MANAGER).list().getItems();
    } catch (KubernetesClientException e) {
      return new ReapReport(List.of(), List.of("listing sandbox namespaces: " + Messages.of(e)));
    }
    for (Namespace namespace : namespaces) {
      String name = namespace.getMetadata().getName();
      Map<String, String> labels = namespace.getMetadata().getLabels();
      String runId = labels == null ? null : labels.get(Labels.RUN_ID);
      if (runId == null
          || !name.equals(BundleFactory.namespaceOf(runId))
          || namespace.getMetadata().getDeletionTimestamp() != null) {
        continue;
      }
      // A missing or garbled expiry reads as long past: a sandbox nobody can date is not kept.
      boolean expired = !Labels.expiresAt(labels).isAfter(now);
      if (!expired && isLive.test(runId)) {
        continue;
      }
      try {
        client.namespaces().withName(name).delete();
        removed.add(runId);
      } catch (KubernetesClientException e) {
        problems.add("deleting namespace " + name + ": " + Messages.of(e));
      }
    }
    return new ReapReport(removed, problems);
  }
}
