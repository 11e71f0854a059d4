package dev.agentsandbox.policy.run;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashMap;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Each row tries one way to hand the workload a variable that undoes or steers around the fence.
 */
class EnvScreenTest {

  static Stream<Arguments> refused() {
    return Stream.of(
        Arguments.of("upper-case HTTPS_PROXY", "HTTPS_PROXY", "proxy settings"),
        Arguments.of("lower-case https_proxy", "https_proxy", "proxy settings"),
        Arguments.of("mixed-case Http_Proxy", "Http_Proxy", "proxy settings"),
        Arguments.of("NO_PROXY turns the proxy off per host", "NO_PROXY", "proxy settings"),
        Arguments.of("no_proxy", "no_proxy", "proxy settings"),
        Arguments.of("ALL_PROXY", "ALL_PROXY", "proxy settings"),
        Arguments.of("npm's proxy setting", "npm_config_https_proxy", "proxy settings"),
        Arguments.of("git's proxy command", "GIT_PROXY_COMMAND", "proxy settings"),
        Arguments.of("LD_PRELOAD injects code", "LD_PRELOAD", "dynamic-loader"),
        Arguments.of("ld_preload in lower case", "ld_preload", "dynamic-loader"),
        Arguments.of("LD_LIBRARY_PATH", "LD_LIBRARY_PATH", "dynamic-loader"),
        Arguments.of("LD_AUDIT", "LD_AUDIT", "dynamic-loader"),
        Arguments.of("JVM options can set nonProxyHosts", "JAVA_TOOL_OPTIONS", "steer"),
        Arguments.of("_JAVA_OPTIONS", "_JAVA_OPTIONS", "steer"),
        Arguments.of("glibc host aliases", "HOSTALIASES", "steer"),
        Arguments.of("resolver options", "RES_OPTIONS", "steer"),
        Arguments.of("a CA bundle to intercept TLS", "SSL_CERT_FILE", "steer"),
        Arguments.of("git's CA bundle (an inspected run's trust)", "GIT_SSL_CAINFO", "steer"),
        Arguments.of("pip's CA bundle (an inspected run's trust)", "PIP_CERT", "steer"),
        Arguments.of(
            "Java's launcher options (an inspected run's trust)", "JDK_JAVA_OPTIONS", "steer"),
        Arguments.of("Node's extra CAs", "NODE_EXTRA_CA_CERTS", "steer"),
        Arguments.of("reserved prefix", "AGENT_SANDBOX_RUN_ID", "reserved"),
        Arguments.of("key with equals sign", "A=B", "letters, digits"),
        Arguments.of("key starting with a digit", "1A", "letters, digits"),
        Arguments.of("empty key", "", "letters, digits"),
        Arguments.of("key with a newline", "A\nB", "letters, digits"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource
  void refused(String name, String key, String reasonPart) {
    assertThat(EnvScreen.problems(Map.of(key, "value")))
        .singleElement()
        .asString()
        .startsWith("env.")
        .contains(reasonPart);
  }

  @Test
  void ordinaryVariablesPass() {
    assertThat(EnvScreen.problems(Map.of("PATH", "/usr/bin", "GITHUB_TOKEN", "x", "DEBUG", "")))
        .isEmpty();
  }

  @Test
  void valuesWithNulOrOverLengthAreRefused() {
    assertThat(EnvScreen.problems(Map.of("A", "x\0y"))).singleElement().asString().contains("NUL");
    assertThat(EnvScreen.problems(Map.of("A", "x".repeat(EnvScreen.MAX_VALUE_LENGTH + 1))))
        .singleElement()
        .asString()
        .contains("longer");
  }

  @Test
  void tooManyVariablesIsOneProblem() {
    Map<String, String> env = new HashMap<>();
    for (int i = 0; i <= EnvScreen.MAX_VARIABLES; i++) {
      env.put("V" + i, "x");
    }
    assertThat(EnvScreen.problems(env)).singleElement().asString().contains("at most");
  }

  @Test
  void everyProblemIsReportedNotJustTheFirst() {
    assertThat(EnvScreen.problems(Map.of("HTTP_PROXY", "x", "LD_PRELOAD", "y", "OK", "z")))
        .hasSize(2);
  }
}
