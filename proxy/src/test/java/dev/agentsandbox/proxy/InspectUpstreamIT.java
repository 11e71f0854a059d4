package dev.agentsandbox.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.policy.event.DecisionRecord;
import dev.agentsandbox.policy.net.Reason;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * An inspected host whose real certificate does not verify is refused, with the reason, before the
 * tunnel is answered: the proxy never terminates a client's TLS for an upstream it could not
 * verify, so a workload cannot be handed a run-CA certificate for a host that was not the host.
 */
class InspectUpstreamIT {
  static Stream<Arguments> badCertificates() {
    Instant now = Instant.now();
    return Stream.of(
        Arguments.of(
            "an expired certificate",
            (InspectWorld.ApiCertificate)
                ca ->
                    ca.server(
                        "api.test", now.minus(10, ChronoUnit.DAYS), now.minus(1, ChronoUnit.DAYS)),
            "has expired"),
        Arguments.of(
            "a certificate not valid yet",
            (InspectWorld.ApiCertificate)
                ca ->
                    ca.server(
                        "api.test", now.plus(1, ChronoUnit.DAYS), now.plus(10, ChronoUnit.DAYS)),
            "not valid yet"),
        Arguments.of(
            "a certificate for another name",
            (InspectWorld.ApiCertificate) ca -> ca.serverFor("evil.test"),
            "another name"),
        Arguments.of(
            "a certificate of an authority the proxy does not trust",
            (InspectWorld.ApiCertificate)
                ca -> TestCa.create("a workload's own CA").serverFor("api.test"),
            "no authority the proxy trusts"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("badCertificates")
  void anUpstreamThatDoesNotVerifyIsRefusedWithItsReason(
      String name, InspectWorld.ApiCertificate certificate, String detail) throws Exception {
    try (InspectWorld world = new InspectWorld(List.of("GET /**"), certificate)) {
      String answer =
          Fixture.exchange(
              world.proxyAddress(),
              "CONNECT "
                  + world.apiTarget()
                  + " HTTP/1.1\r\nHost: "
                  + world.apiTarget()
                  + "\r\n\r\n");
      assertThat(answer).as(name).startsWith("HTTP/1.1 502");
      assertThat(answer).as(name).contains("X-Agent-Sandbox-Denied: upstream-certificate");
      DecisionRecord refusal = world.decisions.await(d -> !d.allowed());
      assertThat(refusal.reason()).as(name).isEqualTo(Reason.UPSTREAM_CERTIFICATE);
      assertThat(refusal.detail()).as(name).contains(detail);
      assertThat(refusal.method()).isEqualTo("CONNECT");
      assertThat(world.api.seen()).as(name + ": no request was sent").isEmpty();
    }
  }
}
