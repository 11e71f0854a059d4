package dev.agentsandbox.policy.net;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** Step 6: which resolved answer may be dialled, one row per case. */
class AddressPolicyTest {
  private static final InetAddress HOST_ADDRESS = IpLiteral.parseAddress("10.1.2.3");

  /** Internal: one loopback /32, a private /24 that holds a metadata-like neighbour, and a ULA. */
  private static final AddressPolicy POLICY =
      new AddressPolicy(
          InternalRanges.parse(List.of("127.0.0.2/32", "10.1.2.0/24", "100.100.100.0/24")),
          Set.of(HOST_ADDRESS, IpLiteral.parseAddress("127.0.0.1")),
          new InetSocketAddress(IpLiteral.parseAddress("127.0.0.2"), 3128));

  private static final AddressPolicy WILDCARD_LISTENER =
      new AddressPolicy(
          InternalRanges.parse(List.of("10.1.2.0/24")),
          Set.of(HOST_ADDRESS),
          new InetSocketAddress(IpLiteral.parseAddress("0.0.0.0"), 3128));

  static Stream<Arguments> checks() {
    return Stream.of(
        row("public address is permitted", POLICY, "93.184.215.14", 443, AddressClass.PUBLIC, true),
        row(
            "declared loopback /32 is permitted",
            POLICY,
            "127.0.0.2",
            443,
            AddressClass.LOOPBACK,
            true),
        row(
            "undeclared loopback is refused",
            POLICY,
            "127.0.0.3",
            443,
            AddressClass.LOOPBACK,
            false),
        row(
            "mapped form of declared /32 is permitted",
            POLICY,
            "::ffff:127.0.0.2",
            443,
            AddressClass.LOOPBACK,
            true),
        row(
            "declared private range is permitted",
            POLICY,
            "10.1.2.9",
            80,
            AddressClass.PRIVATE,
            true),
        row(
            "private outside the range is refused",
            POLICY,
            "10.1.3.9",
            80,
            AddressClass.PRIVATE,
            false),
        row(
            "metadata inside a declared range is refused",
            POLICY,
            "100.100.100.200",
            80,
            AddressClass.METADATA,
            false),
        row(
            "mapped metadata is refused",
            POLICY,
            "::ffff:169.254.169.254",
            80,
            AddressClass.METADATA,
            false),
        row(
            "proxy's own listener is refused even when declared",
            POLICY,
            "127.0.0.2",
            3128,
            AddressClass.PROXY_LISTENER,
            false),
        row(
            "mapped form of the listener is refused",
            POLICY,
            "::ffff:127.0.0.2",
            3128,
            AddressClass.PROXY_LISTENER,
            false),
        row(
            "declared host address is honoured",
            POLICY,
            "10.1.2.3",
            8080,
            AddressClass.PRIVATE,
            true),
        row(
            "undeclared host address is refused as proxy-host",
            WILDCARD_LISTENER,
            "127.0.0.1",
            8080,
            AddressClass.LOOPBACK,
            false),
        row(
            "wildcard listener: any loopback on its port loops",
            WILDCARD_LISTENER,
            "127.9.9.9",
            3128,
            AddressClass.PROXY_LISTENER,
            false),
        row(
            "wildcard listener: host address on its port loops",
            WILDCARD_LISTENER,
            "10.1.2.3",
            3128,
            AddressClass.PROXY_LISTENER,
            false),
        row(
            "wildcard listener: declared host address elsewhere is honoured",
            WILDCARD_LISTENER,
            "10.1.2.3",
            8080,
            AddressClass.PRIVATE,
            true),
        row(
            "unspecified address is refused",
            POLICY,
            "0.0.0.0",
            443,
            AddressClass.UNSPECIFIED,
            false),
        row("IPv6 loopback is refused", POLICY, "::1", 443, AddressClass.LOOPBACK, false));
  }

  @ParameterizedTest(name = "{0}: {2}:{3}")
  @MethodSource
  void checks(
      String name,
      AddressPolicy policy,
      String address,
      int port,
      AddressClass expectedClass,
      boolean permitted) {
    AddressCheck check = policy.check(IpLiteral.parseAddress(address), port);
    assertThat(check.addressClass()).isEqualTo(expectedClass);
    assertThat(check.permitted()).isEqualTo(permitted);
  }

  @org.junit.jupiter.api.Test
  void aPublicHostAddressIsRefusedAsProxyHost() {
    AddressPolicy policy =
        new AddressPolicy(
            InternalRanges.NONE,
            Set.of(IpLiteral.parseAddress("93.184.215.14")),
            new InetSocketAddress(IpLiteral.parseAddress("0.0.0.0"), 3128));
    AddressCheck check = policy.check(IpLiteral.parseAddress("93.184.215.14"), 443);
    assertThat(check.addressClass()).isEqualTo(AddressClass.PROXY_HOST);
    assertThat(check.permitted()).isFalse();
  }

  @org.junit.jupiter.api.Test
  void mixedAnswersPickThePermittedOneWhateverItsPosition() {
    List<InetAddress> answers =
        List.of(
            IpLiteral.parseAddress("169.254.169.254"),
            IpLiteral.parseAddress("127.0.0.3"),
            IpLiteral.parseAddress("127.0.0.2"),
            IpLiteral.parseAddress("10.9.9.9"));
    AddressPolicy.Choice choice = POLICY.choose(answers, 443);
    assertThat(choice.chosen()).isPresent();
    assertThat(IpLiteral.format(choice.chosen().get().address())).isEqualTo("127.0.0.2");
    assertThat(choice.checks())
        .extracting(AddressCheck::permitted)
        .containsExactly(false, false, true, false);
    assertThat(choice.firstRefused().get().addressClass()).isEqualTo(AddressClass.METADATA);
  }

  @org.junit.jupiter.api.Test
  void allRefusedAnswersChooseNothing() {
    AddressPolicy.Choice choice =
        POLICY.choose(
            List.of(IpLiteral.parseAddress("127.0.0.3"), IpLiteral.parseAddress("::1")), 443);
    assertThat(choice.chosen()).isEmpty();
    assertThat(choice.firstRefused().get().addressClass()).isEqualTo(AddressClass.LOOPBACK);
  }

  private static Arguments row(
      String name,
      AddressPolicy policy,
      String address,
      int port,
      AddressClass expectedClass,
      boolean permitted) {
    return Arguments.of(name, policy, address, port, expectedClass, permitted);
  }
}
