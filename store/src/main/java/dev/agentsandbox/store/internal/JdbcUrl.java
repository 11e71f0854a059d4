package dev.agentsandbox.store.internal;

import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * A JDBC URL split into its base and query parameters, so that the credentials can be passed on
 * separately and every URL that appears in a message or log is redacted.
 */
public record JdbcUrl(String base, List<String> parameters) {

  private static final String REDACTED = "***";

  public JdbcUrl {
    parameters = List.copyOf(parameters);
  }

  /** Splits {@code url} at its first '?' and the query at '&amp;'. */
  public static JdbcUrl parse(String url) {
    int question = url.indexOf('?');
    if (question < 0) {
      return new JdbcUrl(url, List.of());
    }
    List<String> parameters = new ArrayList<>();
    for (String parameter : url.substring(question + 1).split("&")) {
      if (!parameter.isEmpty()) {
        parameters.add(parameter);
      }
    }
    return new JdbcUrl(url.substring(0, question), parameters);
  }

  public Optional<String> user() {
    return parameter("user");
  }

  public Optional<String> password() {
    return parameter("password");
  }

  /** The value of the first parameter called {@code name} (URL-decoded). */
  public Optional<String> parameter(String name) {
    for (String parameter : parameters) {
      int equals = parameter.indexOf('=');
      String key = equals < 0 ? parameter : parameter.substring(0, equals);
      if (key.equalsIgnoreCase(name)) {
        String value = equals < 0 ? "" : parameter.substring(equals + 1);
        return Optional.of(URLDecoder.decode(value, StandardCharsets.UTF_8));
      }
    }
    return Optional.empty();
  }

  /** The URL without user and password parameters. */
  public String withoutCredentials() {
    List<String> kept = new ArrayList<>();
    for (String parameter : parameters) {
      if (!isCredential(parameter)) {
        kept.add(parameter);
      }
    }
    return kept.isEmpty() ? base : base + "?" + String.join("&", kept);
  }

  /** The URL with the password value (and any user-info before '@') replaced, for messages. */
  public String redacted() {
    String safeBase = base.replaceAll("//[^/@]*@", "//" + REDACTED + "@");
    List<String> shown = new ArrayList<>();
    for (String parameter : parameters) {
      String key = parameter.contains("=") ? parameter.substring(0, parameter.indexOf('=')) : "";
      shown.add(isSecret(key) ? key + "=" + REDACTED : parameter);
    }
    return shown.isEmpty() ? safeBase : safeBase + "?" + String.join("&", shown);
  }

  /** Redacted, so that a logged record never shows the password. */
  @Override
  public String toString() {
    return redacted();
  }

  private static boolean isCredential(String parameter) {
    String key =
        (parameter.contains("=") ? parameter.substring(0, parameter.indexOf('=')) : parameter)
            .toLowerCase(Locale.ROOT);
    return key.equals("user") || key.equals("password");
  }

  private static boolean isSecret(String key) {
    String lower = key.toLowerCase(Locale.ROOT);
    return lower.contains("password") || lower.contains("secret") || lower.equals("sslkey");
  }
}
