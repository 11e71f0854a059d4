package dev.agentsandbox.backend.k8s;

import dev.agentsandbox.policy.text.Bounded;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.List;

/** Short, single-line renderings of API failures for operator-facing messages. */
final class Messages {
  private static final int MAX = 300;
  private static final KubernetesSerialization SERIALIZATION = new KubernetesSerialization();

  private Messages() {}

  /** The API server's answer: HTTP code and status message, or the client's own message. */
  static String of(Throwable e) {
    return shortened(raw(e));
  }

  /**
   * {@link #of} with each of {@code secrets} cut out first, as sent and as the API server would
   * quote it back (base64 in a Secret's {@code data}, escaped in JSON), before the text is
   * shortened, so that no part of one survives at the cut.
   */
  static String redacted(Throwable e, Collection<String> secrets, String mark) {
    String text = raw(e);
    for (String secret : secrets) {
      if (secret.isEmpty()) {
        continue;
      }
      for (String form : forms(secret)) {
        text = text.replace(form, mark);
      }
    }
    return shortened(text);
  }

  private static List<String> forms(String secret) {
    List<String> forms = new ArrayList<>();
    forms.add(secret);
    forms.add(Base64.getEncoder().encodeToString(secret.getBytes(StandardCharsets.UTF_8)));
    String json = SERIALIZATION.asJson(secret);
    forms.add(json.substring(1, json.length() - 1));
    // Longest first, so that a shorter form inside a longer one does not break the longer's match.
    forms.sort((a, b) -> Integer.compare(b.length(), a.length()));
    return forms;
  }

  private static String raw(Throwable e) {
    if (e instanceof KubernetesClientException k && k.getStatus() != null) {
      return "HTTP " + k.getCode() + " " + k.getStatus().getMessage();
    }
    return String.valueOf(e.getMessage());
  }

  /** One line ({@link Bounded.Escape#ONE_LINE}: other control characters as {@code ?}), cut. */
  private static String shortened(String text) {
    return Bounded.text(text, MAX, Bounded.Escape.ONE_LINE);
  }
}
