package dev.agentsandbox.policy.run;

import dev.agentsandbox.policy.text.Bounded;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Screens the environment a caller asks to give a run's workload. It refuses keys that would undo
 * the fence or steer the workload's loader, resolver or runtime around it, and malformed or
 * over-large input.
 *
 * <p>The network layer already stops a workload that ignores its proxy variables, so this is
 * defence in depth: it keeps a caller from quietly pointing tools at another proxy, turning the
 * proxy off for some hosts, or preloading code into every process of the sandbox.
 *
 * <p>Stateless and thread-safe.
 */
public final class EnvScreen {
  /** Most variables one run may be given. */
  public static final int MAX_VARIABLES = 128;

  /** Longest key. */
  public static final int MAX_KEY_LENGTH = 128;

  /** Longest value, in characters. */
  public static final int MAX_VALUE_LENGTH = 32 * 1024;

  private static final Pattern KEY = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");

  /**
   * Keys refused outright, compared in upper case. Proxy variables are refused by the substring
   * rule below; these are the ones that change how programs load code or resolve names, or the JVM
   * option variables that can set {@code -Dhttp.nonProxyHosts} and friends.
   */
  private static final Set<String> REFUSED =
      Set.of(
          "JAVA_TOOL_OPTIONS",
          "_JAVA_OPTIONS",
          "JDK_JAVA_OPTIONS",
          "HOSTALIASES",
          "RES_OPTIONS",
          "LOCALDOMAIN",
          "GCONV_PATH",
          "MALLOC_CHECK_",
          "NODE_EXTRA_CA_CERTS",
          "SSL_CERT_FILE",
          "SSL_CERT_DIR",
          "CURL_CA_BUNDLE",
          "REQUESTS_CA_BUNDLE",
          // The rest of what a run that inspects hosts sets to trust its proxy's CA.
          "GIT_SSL_CAINFO",
          "GIT_SSL_CAPATH",
          "PIP_CERT");

  private EnvScreen() {}

  /**
   * Every problem with the requested environment, each prefixed with its JSON path under {@code
   * env}; empty when the environment may be given to the workload as it is.
   */
  public static List<String> problems(Map<String, String> env) {
    List<String> problems = new ArrayList<>();
    if (env.size() > MAX_VARIABLES) {
      problems.add("env: at most " + MAX_VARIABLES + " variables (got " + env.size() + ")");
    }
    env.keySet().stream()
        .sorted()
        .forEach(
            key -> {
              String reason = refusal(key, env.get(key));
              if (reason != null) {
                problems.add("env." + shown(key) + ": " + reason);
              }
            });
    return List.copyOf(problems);
  }

  /**
   * Why a variable named {@code key} may not be set for a workload whatever its value (a proxy,
   * loader or reserved name), or empty when it may.
   */
  public static java.util.Optional<String> keyRefusal(String key) {
    return java.util.Optional.ofNullable(refusal(key, ""));
  }

  private static String refusal(String key, String value) {
    if (key.isEmpty() || key.length() > MAX_KEY_LENGTH || !KEY.matcher(key).matches()) {
      return "a key must be letters, digits and underscores, not starting with a digit, at most "
          + MAX_KEY_LENGTH
          + " characters";
    }
    String upper = key.toUpperCase(Locale.ROOT);
    if (upper.contains("PROXY")) {
      return "proxy settings are the sandbox's own and cannot be overridden";
    }
    if (upper.startsWith("LD_") || upper.startsWith("DYLD_")) {
      return "dynamic-loader variables are refused (they inject code into every process)";
    }
    if (upper.startsWith("AGENT_SANDBOX_")) {
      return "the AGENT_SANDBOX_ prefix is reserved for the sandbox itself";
    }
    if (REFUSED.contains(upper)) {
      return "this variable can steer the workload around the fence and is refused";
    }
    if (value == null) {
      return "a value is required (use an empty string for none)";
    }
    if (value.length() > MAX_VALUE_LENGTH) {
      return "the value is longer than " + MAX_VALUE_LENGTH + " characters";
    }
    if (value.indexOf('\0') >= 0) {
      return "the value holds a NUL character";
    }
    return null;
  }

  /** The key as it may appear in an error: bounded, and only printable ASCII. */
  private static String shown(String key) {
    return Bounded.text(key, 40, Bounded.Escape.VISIBLE_ASCII);
  }
}
