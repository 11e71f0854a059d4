package dev.agentsandbox.policy.evidence;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** Where registrable domains begin, against the real Public Suffix List (Guava's copy). */
class PublicSuffixListTest {
  static Stream<Arguments> names() {
    return Stream.of(
        row("a name under .com is registered one label below it", "api.vendor.com", "vendor.com"),
        row("the registrable domain is its own", "vendor.com", "vendor.com"),
        row("a top-level domain is a public suffix", "com", null),
        row("co.uk is a public suffix (ICANN section)", "co.uk", null),
        row("under co.uk the owner is one label below", "www.example.co.uk", "example.co.uk"),
        row("github.io is a public suffix (private section)", "github.io", null),
        row("each github.io site is its own registrable domain", "a.b.github.io", "b.github.io"),
        row("a private-section suffix of a cloud", "s3.amazonaws.com", null),
        row(
            "a bucket host under it is its own owner's",
            "x.s3.amazonaws.com",
            "x.s3.amazonaws.com"),
        row(
            "an unlisted TLD falls under the list's default rule *",
            "a.b.upstream.test",
            "upstream.test"),
        row("a bare unlisted TLD is its own public suffix", "test", null),
        row(
            "a cluster-local name under the default rule",
            "gw.platform.svc.cluster.local",
            "cluster.local"),
        row("a last label starting with a digit is unreadable: no domain", "a.b.1x", null));
  }

  private static Arguments row(String name, String host, String registrable) {
    return Arguments.of(name, host, Optional.ofNullable(registrable));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("names")
  void registrableDomain(String name, String host, Optional<String> registrable) {
    assertThat(PublicSuffixList.registrableDomain(host)).as(name).isEqualTo(registrable);
    assertThat(PublicSuffixList.wildcardAllowedOver(host))
        .as("*.%s may be proposed", host)
        .isEqualTo(registrable.isPresent());
  }
}
