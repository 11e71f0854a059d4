package dev.agentsandbox.store;

import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.store.internal.JdbcUrl;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** URLs in messages and logs never carry the password. */
class JdbcUrlTest {

  static Stream<Arguments> redactions() {
    return Stream.of(
        Arguments.of(
            "password parameter is masked",
            "jdbc:postgresql://db:5432/x?user=app&password=hunter2",
            "jdbc:postgresql://db:5432/x?user=app&password=***"),
        Arguments.of(
            "parameter names are matched case-insensitively",
            "jdbc:postgresql://db/x?PASSWORD=hunter2",
            "jdbc:postgresql://db/x?PASSWORD=***"),
        Arguments.of(
            "user-info before @ is masked",
            "jdbc:postgresql://app:hunter2@db/x",
            "jdbc:postgresql://***@db/x"),
        Arguments.of(
            "ssl key password is masked",
            "jdbc:postgresql://db/x?sslpassword=hunter2&ssl=true",
            "jdbc:postgresql://db/x?sslpassword=***&ssl=true"),
        Arguments.of(
            "url without parameters is unchanged",
            "jdbc:sqlite:/var/lib/agent-sandbox/store.db",
            "jdbc:sqlite:/var/lib/agent-sandbox/store.db"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("redactions")
  void redacted(String name, String url, String expected) {
    assertThat(JdbcUrl.parse(url).redacted()).isEqualTo(expected).doesNotContain("hunter2");
    assertThat(JdbcUrl.parse(url).toString()).doesNotContain("hunter2");
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("redactions")
  void withoutCredentialsDropsUserAndPassword(String name, String url, String expected) {
    JdbcUrl parsed = JdbcUrl.parse(url);
    String stripped = parsed.withoutCredentials();

    // Other secrets the driver needs (sslpassword) stay: Hikari masks "*password=" in URLs it logs.
    assertThat(stripped).doesNotContainPattern("(?i)[?&](user|password)=");
  }

  @org.junit.jupiter.api.Test
  void credentialsAreDecoded() {
    JdbcUrl url = JdbcUrl.parse("jdbc:postgresql://db/x?user=a%40b&password=p%26q&ssl=true");

    assertThat(url.user()).contains("a@b");
    assertThat(url.password()).contains("p&q");
    assertThat(url.withoutCredentials()).isEqualTo("jdbc:postgresql://db/x?ssl=true");
  }
}
