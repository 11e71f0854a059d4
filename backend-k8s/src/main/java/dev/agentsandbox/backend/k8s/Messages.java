package dev.agentsandbox.backend.k8s;

import io.fabric8.kubernetes.client.KubernetesClientException;

/** Short, single-line renderings of API failures for operator-facing messages. */
final class Messages {
  private static final int MAX = 300;

  private Messages() {}

  /** The API server's answer: HTTP code and status message, or the client's own message. */
  static String of(Throwable e) {
    String text;
    if (e instanceof KubernetesClientException k && k.getStatus() != null) {
      text = "HTTP " + k.getCode() + " " + k.getStatus().getMessage();
    } else {
      text = String.valueOf(e.getMessage());
    }
    text = text.replaceAll("\\s+", " ").strip();
    return text.length() <= MAX ? text : text.substring(0, MAX) + "...";
  }
}
