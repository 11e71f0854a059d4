package dev.agentsandbox.backend.k8s;

import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * How sessions reach their pods (docs/backends/k8s.md, "Sessions").
 *
 * @param port the agent pod's port the session relay listens on, and the only one its ingress
 *     policy opens, to the control plane's pods alone
 * @param runnerPort the loopback port inside the pod on which the step runner takes the relay's one
 *     connection
 * @param controlPlanePodLabels the labels of the control plane's own pods (in {@code
 *     controlPlaneNamespace}), the only pods the relay's port admits; the Deployment's pod labels
 * @param readyTimeout how long opening a session waits for the agent's pod to have an address and
 *     its relay to announce itself (image pulls, the relay's JVM start)
 */
public record SessionSettings(
    int port, int runnerPort, Map<String, String> controlPlanePodLabels, Duration readyTimeout) {
  private static final Pattern LABEL_KEY =
      Pattern.compile(
          "([a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?");
  private static final Pattern LABEL_VALUE =
      Pattern.compile("[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?");

  /** The defaults, for the Deployment in {@code deploy/k3s/sandbox/agent-sandbox.yaml}. */
  public static final SessionSettings DEFAULT =
      new SessionSettings(
          7443, 7444, Map.of("app.kubernetes.io/name", "agent-sandbox"), Duration.ofSeconds(120));

  public SessionSettings {
    port("session port", port);
    port("runner port", runnerPort);
    if (port == runnerPort) {
      throw new IllegalArgumentException("the session port and the runner port must differ");
    }
    controlPlanePodLabels = Map.copyOf(controlPlanePodLabels);
    if (controlPlanePodLabels.isEmpty()) {
      // An empty pod selector would open the relay's port to every pod of the namespace.
      throw new IllegalArgumentException("controlPlanePodLabels is empty");
    }
    controlPlanePodLabels.forEach(
        (key, value) -> {
          if (!LABEL_KEY.matcher(key).matches() || !LABEL_VALUE.matcher(value).matches()) {
            throw new IllegalArgumentException(
                "controlPlanePodLabels holds an invalid label: " + key + "=" + value);
          }
        });
    Objects.requireNonNull(readyTimeout, "readyTimeout");
    if (readyTimeout.isNegative() || readyTimeout.isZero()) {
      throw new IllegalArgumentException("the session ready timeout must be positive");
    }
  }

  private static void port(String what, int port) {
    if (port < 1 || port > 65535) {
      throw new IllegalArgumentException(what + " out of range: " + port);
    }
  }
}
