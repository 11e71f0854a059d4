package dev.agentsandbox.policy.net;

import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.policy.AllowList;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** Steps 1 to 5 on CONNECT-style targets (host:port), one row per case. */
class EgressDeciderTest {
  private static final AllowList ALLOW =
      AllowList.parse(
          List.of(
              "api.vendor.com",
              "*.vendor.com",
              "db.example.com:5432",
              "xn--bcher-kva.example",
              "gateway.corp.example"));
  private static final EgressDecider OPEN = new EgressDecider(ALLOW, Optional.empty());
  private static final EgressDecider NARROWED =
      new EgressDecider(ALLOW, Optional.of(AllowList.parse(List.of("api.vendor.com"))));

  static Stream<Arguments> decisions() {
    return Stream.of(
        row("exact name on 443", OPEN, "api.vendor.com:443", Reason.ALLOWED, "api.vendor.com"),
        row("exact name on 80", OPEN, "api.vendor.com:80", Reason.ALLOWED, "api.vendor.com"),
        row(
            "upper case is canonicalized",
            OPEN,
            "API.Vendor.COM:443",
            Reason.ALLOWED,
            "api.vendor.com"),
        row(
            "trailing dot is dropped",
            OPEN,
            "api.vendor.com.:443",
            Reason.ALLOWED,
            "api.vendor.com"),
        row(
            "unicode name matches its punycode entry",
            OPEN,
            "bücher.example:443",
            Reason.ALLOWED,
            "xn--bcher-kva.example"),
        row(
            "wildcard matches deep subdomain",
            OPEN,
            "a.b.vendor.com:443",
            Reason.ALLOWED,
            "a.b.vendor.com"),
        row(
            "wildcard never matches apex",
            OPEN,
            "vendor.com:443",
            Reason.NOT_ALLOWED,
            "vendor.com"),
        row(
            "wildcard needs a label boundary",
            OPEN,
            "evilvendor.com:443",
            Reason.NOT_ALLOWED,
            "evilvendor.com"),
        row(
            "suffix trick is not a subdomain",
            OPEN,
            "api.vendor.com.evil.io:443",
            Reason.NOT_ALLOWED,
            "api.vendor.com.evil.io"),
        row("unlisted host", OPEN, "example.org:443", Reason.NOT_ALLOWED, "example.org"),
        row(
            "port 22 needs an entry that names it",
            OPEN,
            "api.vendor.com:22",
            Reason.PORT_NOT_ALLOWED,
            "api.vendor.com"),
        row("named port is allowed", OPEN, "db.example.com:5432", Reason.ALLOWED, "db.example.com"),
        row(
            "named port replaces 443",
            OPEN,
            "db.example.com:443",
            Reason.PORT_NOT_ALLOWED,
            "db.example.com"),
        row("decimal IPv4 literal", OPEN, "127.0.0.1:443", Reason.IP_LITERAL, "127.0.0.1"),
        row("short IPv4 literal", OPEN, "127.1:443", Reason.IP_LITERAL, "127.1"),
        row("hex IPv4 literal", OPEN, "0x7f.1:443", Reason.IP_LITERAL, "0x7f.1"),
        row("integer IPv4 literal", OPEN, "2130706433:443", Reason.IP_LITERAL, "2130706433"),
        row("octal IPv4 literal", OPEN, "0177.0.0.1:443", Reason.IP_LITERAL, "0177.0.0.1"),
        row(
            "bracketed mapped IPv6",
            OPEN,
            "[::ffff:127.0.0.1]:443",
            Reason.IP_LITERAL,
            "[::ffff:127.0.0.1]"),
        row("bare IPv6", OPEN, "::1:443", Reason.IP_LITERAL, "::1"),
        row("bracketed name", OPEN, "[api.vendor.com]:443", Reason.IP_LITERAL, "[api.vendor.com]"),
        row(
            "userinfo",
            OPEN,
            "user@api.vendor.com:443",
            Reason.INVALID_TARGET,
            "user@api.vendor.com"),
        row(
            "percent-encoding",
            OPEN,
            "api%2evendor.com:443",
            Reason.INVALID_TARGET,
            "api%2evendor.com"),
        row(
            "backslash",
            OPEN,
            "api.vendor.com\\@evil.io:443",
            Reason.INVALID_TARGET,
            "api.vendor.com\\@evil.io"),
        row("whitespace", OPEN, "api.vendor.com :443", Reason.INVALID_TARGET, "api.vendor.com?"),
        row("empty label", OPEN, "api..vendor.com:443", Reason.INVALID_TARGET, "api..vendor.com"),
        row(
            "64-character label",
            OPEN,
            "a".repeat(64) + ".vendor.com:443",
            Reason.INVALID_TARGET,
            "a".repeat(64) + ".vendor.com"),
        row(
            "254-character name",
            OPEN,
            ("a".repeat(49) + ".").repeat(5) + "vendor.com:443",
            Reason.INVALID_TARGET,
            null),
        row("missing port", OPEN, "api.vendor.com", Reason.INVALID_TARGET, "api.vendor.com"),
        row("signed port", OPEN, "api.vendor.com:+443", Reason.INVALID_TARGET, "api.vendor.com"),
        row("port zero", OPEN, "api.vendor.com:0", Reason.INVALID_TARGET, "api.vendor.com"),
        row(
            "port out of range",
            OPEN,
            "api.vendor.com:65536",
            Reason.INVALID_TARGET,
            "api.vendor.com"),
        row("empty target", OPEN, "", Reason.INVALID_TARGET, ""),
        row(
            "instance policy allows too",
            NARROWED,
            "api.vendor.com:443",
            Reason.ALLOWED,
            "api.vendor.com"),
        row(
            "instance policy narrows the sandbox list",
            NARROWED,
            "a.vendor.com:443",
            Reason.INSTANCE_POLICY,
            "a.vendor.com"),
        row(
            "sandbox refusal comes before the instance policy",
            NARROWED,
            "example.org:443",
            Reason.NOT_ALLOWED,
            "example.org"));
  }

  @ParameterizedTest(name = "{0}: {2} -> {3}")
  @MethodSource
  void decisions(String name, EgressDecider policy, String target, Reason reason, String host) {
    Decision decision = policy.decideAuthority(target);
    assertThat(decision.reason()).isEqualTo(reason);
    assertThat(decision.allowed()).isEqualTo(reason == Reason.ALLOWED);
    if (host != null) {
      assertThat(decision.host()).isEqualTo(host);
    }
    if (reason != Reason.ALLOWED) {
      assertThat(decision.detail()).isNotBlank();
    }
  }

  @org.junit.jupiter.api.Test
  void echoOfUntrustedInputIsBoundedAndPrintable() {
    Decision decision = OPEN.decideAuthority("x".repeat(500) + "\r\n:443");
    assertThat(decision.reason()).isEqualTo(Reason.INVALID_TARGET);
    assertThat(decision.host()).hasSizeLessThanOrEqualTo(83).doesNotContain("\r", "\n");
  }

  private static Arguments row(
      String name, EgressDecider policy, String target, Reason reason, String host) {
    return Arguments.of(name, policy, target, reason, host);
  }
}
