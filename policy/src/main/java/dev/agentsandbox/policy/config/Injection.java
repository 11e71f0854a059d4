package dev.agentsandbox.policy.config;

import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * A credential the proxy sets as a header on every request to one inspected host, and on no other:
 * the workload never holds its value (it gets {@link #PLACEHOLDER} instead), so it can neither read
 * it nor send it anywhere else. Immutable and thread-safe.
 *
 * @param credential the name of one of the agent's credentials, minted per run as any other
 * @param header the header it is set as (any header of that name the client sent is removed first)
 * @param template the header's value, holding {@link #SLOT} exactly once where the value goes
 */
public record Injection(String credential, String header, String template) {
  /** Where a template puts the credential's value. */
  public static final String SLOT = "{credential}";

  /**
   * What the workload gets in place of a credential the proxy holds (its file, and its variable if
   * it has one), so that a tool which insists on a token still runs.
   */
  public static final String PLACEHOLDER = "proxy-managed";

  /** The header an injection sets when it names none. */
  public static final String DEFAULT_HEADER = "Authorization";

  private static final Pattern HEADER = Pattern.compile("[A-Za-z0-9][A-Za-z0-9_-]{0,63}");
  private static final int MAX_TEMPLATE = 256;

  /** Headers that frame the message, name the host, or belong to a hop or the proxy itself. */
  private static final List<String> RESERVED =
      List.of(
          "host",
          "content-length",
          "content-encoding",
          "transfer-encoding",
          "connection",
          "keep-alive",
          "proxy-connection",
          "proxy-authorization",
          "proxy-authenticate",
          "te",
          "trailer",
          "upgrade",
          "http2-settings",
          "expect",
          "accept-encoding");

  public Injection {
    Objects.requireNonNull(credential, "credential");
    if (!CredentialSpec.NAME.matcher(credential).matches()) {
      throw new IllegalArgumentException("not a credential name: " + credential);
    }
    headerProblem(header)
        .ifPresent(
            problem -> {
              throw new IllegalArgumentException(problem);
            });
    templateProblem(template)
        .ifPresent(
            problem -> {
              throw new IllegalArgumentException(problem);
            });
  }

  /** An injection with the default template for its header. */
  public static Injection of(String credential, String header) {
    return new Injection(credential, header, defaultTemplate(header));
  }

  /** {@code Bearer {credential}} for {@code Authorization}, the bare value for any other header. */
  public static String defaultTemplate(String header) {
    return header.equalsIgnoreCase(DEFAULT_HEADER) ? "Bearer " + SLOT : SLOT;
  }

  /** Why {@code header} cannot carry an injected credential, if it cannot. */
  public static Optional<String> headerProblem(String header) {
    if (header == null || !HEADER.matcher(header).matches()) {
      return Optional.of(
          "a header name is 1 to 64 letters, digits, '-' and '_' (such as Authorization)");
    }
    String lower = header.toLowerCase(Locale.ROOT);
    if (RESERVED.contains(lower)
        || lower.startsWith("x-agent-sandbox")
        || lower.startsWith("x-http2")) {
      return Optional.of(
          header + " frames the request or belongs to a hop or the proxy; it cannot be injected");
    }
    return Optional.empty();
  }

  /** Why {@code template} is not a header value holding {@link #SLOT} once, if it is not. */
  public static Optional<String> templateProblem(String template) {
    if (template == null || template.isEmpty() || template.length() > MAX_TEMPLATE) {
      return Optional.of("a template is 1 to " + MAX_TEMPLATE + " characters");
    }
    int at = template.indexOf(SLOT);
    if (at < 0 || template.indexOf(SLOT, at + 1) >= 0) {
      return Optional.of(
          "a template holds " + SLOT + " exactly once (such as Bearer " + SLOT + ")");
    }
    String rest = template.substring(0, at) + template.substring(at + SLOT.length());
    if (rest.indexOf('{') >= 0 || rest.indexOf('}') >= 0) {
      return Optional.of("{ and } appear in a template only as " + SLOT);
    }
    for (int i = 0; i < template.length(); i++) {
      char c = template.charAt(i);
      if (c < 0x20 || c >= 0x7f) {
        return Optional.of("a template holds printable ASCII only (no line breaks)");
      }
    }
    if (template.charAt(0) == ' ' || template.charAt(template.length() - 1) == ' ') {
      return Optional.of("a template neither starts nor ends with a space");
    }
    return Optional.empty();
  }

  /**
   * Why a minted value cannot go into a header, if it cannot; the answer never quotes the value.
   */
  public static Optional<String> valueProblem(String value) {
    if (value.isEmpty() || value.length() > 16 * 1024) {
      return Optional.of("its value is empty or longer than 16 KiB");
    }
    for (int i = 0; i < value.length(); i++) {
      char c = value.charAt(i);
      if (c < 0x21 || c >= 0x7f) {
        return Optional.of(
            "its value holds a space, a line break, a control or a non-ASCII character, which"
                + " cannot go into a header");
      }
    }
    return Optional.empty();
  }

  /** The header value for a minted credential value. */
  public String headerValue(String value) {
    return template.replace(SLOT, value);
  }
}
