package dev.agentsandbox.backend.k8s;

import dev.agentsandbox.backend.SandboxListener;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.LogWatch;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * The run's egress decisions, read from the proxy pod's log (one JSON line each; its ready line on
 * stderr is not one). A run's are read whole when it ends. A session's are also followed as they
 * come ({@link #follow}), so that each step's decisions reach the run service while the step runs;
 * at the end the whole log is read again and only what the follow had not delivered is delivered,
 * in order, each line once. Thread-safe.
 */
final class ProxyDecisions {
  private final KubernetesClient client;
  private final String namespace;
  private final SandboxListener listener;
  private int delivered;
  private boolean finished;
  private LogWatch watch;
  private Thread reader;

  ProxyDecisions(KubernetesClient client, String namespace, SandboxListener listener) {
    this.client = client;
    this.namespace = namespace;
    this.listener = listener;
  }

  /**
   * Follows the proxy's log ({@code get pods/log} with {@code follow=true}). If the follow cannot
   * be opened or ends early, {@link #finish} still delivers everything, only later.
   */
  synchronized void follow() {
    if (watch != null || finished) {
      return;
    }
    try {
      watch =
          client
              .pods()
              .inNamespace(namespace)
              .withName(BundleFactory.PROXY)
              .inContainer(BundleFactory.PROXY_CONTAINER)
              .watchLog();
    } catch (KubernetesClientException e) {
      return;
    }
    LogWatch opened = watch;
    reader =
        Thread.ofVirtual()
            .name("proxy-decisions-" + namespace)
            .start(
                () -> {
                  try (BufferedReader lines =
                      new BufferedReader(
                          new InputStreamReader(opened.getOutput(), StandardCharsets.UTF_8))) {
                    String line;
                    while ((line = lines.readLine()) != null) {
                      deliver(line);
                    }
                  } catch (IOException | RuntimeException e) {
                    // The follow ended (closed at finish, or the stream broke): finish reads the
                    // rest.
                  }
                });
  }

  private synchronized void deliver(String line) {
    String decision = line.strip();
    if (finished || !decision.startsWith("{")) {
      return;
    }
    delivered++;
    listener.onEgressDecision(decision);
  }

  /** Stops the follow and delivers every decision of the whole log not delivered yet. Once. */
  void finish() {
    LogWatch open;
    Thread following;
    synchronized (this) {
      open = watch;
      following = reader;
    }
    if (open != null) {
      open.close();
    }
    if (following != null) {
      try {
        following.join(5000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    String log;
    try {
      log =
          client
              .pods()
              .inNamespace(namespace)
              .withName(BundleFactory.PROXY)
              .inContainer(BundleFactory.PROXY_CONTAINER)
              .getLog();
    } catch (KubernetesClientException e) {
      // A proxy pod that never started has no log; the completion still says how the run ended.
      log = null;
    }
    synchronized (this) {
      if (finished) {
        return;
      }
      List<String> all =
          log == null
              ? List.of()
              : log.lines().map(String::strip).filter(line -> line.startsWith("{")).toList();
      // A log shorter than what was delivered was rotated: nothing in it can be placed.
      for (int i = delivered; i < all.size(); i++) {
        listener.onEgressDecision(all.get(i));
      }
      finished = true;
    }
  }
}
