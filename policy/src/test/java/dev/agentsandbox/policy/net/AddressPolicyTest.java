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

  /**
   * Internal: one loopback /32 on two ports, a private /24 on 80 and 8080, a /25 inside it on 22
   * only, and the service name gw.test on 4000.
   */
  private static final AddressPolicy POLICY =
      new AddressPolicy(
          new InternalRanges(
              java.util.stream.Stream.concat(
                      InternalRanges.parse(
                          List.of("127.0.0.2/32:443,3128", "10.1.2.0/24:80,8080", "10.1.2.0/25:22"))
                          .rules()
                          .stream(),
                      Stream.of(InternalRule.host("gw.test", List.of(4000))))
                  .toList()),
          Set.of(HOST_ADDRESS, IpLiteral.parseAddress("127.0.0.1")),
          new InetSocketAddress(IpLiteral.parseAddress("127.0.0.2"), 3128));

  private static final AddressPolicy WILDCARD_LISTENER =
      new AddressPolicy(
          InternalRanges.parse(List.of("10.1.2.0/24:3128,8080")),
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
            "declared range on a port it does not list is refused",
            POLICY,
            "10.1.2.9",
            443,
            AddressClass.PRIVATE,
            false),
        row(
            "mapped form of a declared range on an unlisted port is refused",
            POLICY,
            "::ffff:10.1.2.9",
            443,
            AddressClass.PRIVATE,
            false),
        row(
            "overlapping destinations: the /25's port inside the /25",
            POLICY,
            "10.1.2.5",
            22,
            AddressClass.PRIVATE,
            true),
        row(
            "overlapping destinations: the /25's port outside it is refused",
            POLICY,
            "10.1.2.200",
            22,
            AddressClass.PRIVATE,
            false),
        rowFor(
            "service name: its private address on its port",
            "gw.test",
            "10.43.0.10",
            4000,
            AddressClass.PRIVATE,
            true),
        rowFor(
            "service name: another port is refused",
            "gw.test",
            "10.43.0.10",
            4001,
            AddressClass.PRIVATE,
            false),
        rowFor(
            "service address reached under another name is refused",
            "other.test",
            "10.43.0.10",
            4000,
            AddressClass.PRIVATE,
            false),
        rowFor(
            "service name resolving to loopback is refused",
            "gw.test",
            "127.0.0.5",
            4000,
            AddressClass.LOOPBACK,
            false),
        rowFor(
            "service name resolving to link-local is refused",
            "gw.test",
            "169.254.10.1",
            4000,
            AddressClass.LINK_LOCAL,
            false),
        rowFor(
            "service name resolving to metadata is refused",
            "gw.test",
            "100.100.100.200",
            4000,
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

  @ParameterizedTest(name = "{0}: {3} as {2}:{4}")
  @MethodSource
  void checks(
      String name,
      AddressPolicy policy,
      String host,
      String address,
      int port,
      AddressClass expectedClass,
      boolean permitted) {
    AddressCheck check = policy.check(host, IpLiteral.parseAddress(address), port);
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
    AddressCheck check = policy.check("api.test", IpLiteral.parseAddress("93.184.215.14"), 443);
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
    AddressPolicy.Choice choice = POLICY.choose("api.test", answers, 443);
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
            "api.test",
            List.of(IpLiteral.parseAddress("127.0.0.3"), IpLiteral.parseAddress("::1")),
            443);
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
    return Arguments.of(name, policy, "api.test", address, port, expectedClass, permitted);
  }

  private static Arguments rowFor(
      String name,
      String host,
      String address,
      int port,
      AddressClass expectedClass,
      boolean permitted) {
    return Arguments.of(name, POLICY, host, address, port, expectedClass, permitted);
  }
}
