package dev.agentsandbox.proxy;

import dev.agentsandbox.policy.net.AddressPolicy;
import dev.agentsandbox.policy.net.EgressDecider;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * What every connection handler of one running proxy shares; fixed once the proxy listens.
 *
 * @param egress steps 1 to 5 (no I/O)
 * @param addresses step 6 (no I/O), knowing the proxy's own listening socket
 * @param resolver called only for names {@code egress} allowed
 * @param decisions where every decision goes
 * @param metrics counters and gauges
 * @param limits resource limits
 * @param runId the run this proxy serves
 * @param openConnections client connections open now, for {@link Limits#maxConnections()}
 * @param connector opens upstream connections to checked addresses
 * @param awaitingPolicy true for the state of a proxy started without its policy: every request on
 *     a connection accepted in this state is refused ({@code policy-pending}), before any parsing
 *     of its target, any lookup or any dial
 * @param inspection the inspected hosts, the run's CA and the upstream TLS context; null when every
 *     host is an opaque tunnel
 */
record ProxyContext(
    EgressDecider egress,
    AddressPolicy addresses,
    HostResolver resolver,
    DecisionLog decisions,
    ProxyMetrics metrics,
    Limits limits,
    String runId,
    AtomicInteger openConnections,
    Connector connector,
    boolean awaitingPolicy,
    Inspection inspection) {
  /** A context inspecting no host. */
  ProxyContext(
      EgressDecider egress,
      AddressPolicy addresses,
      HostResolver resolver,
      DecisionLog decisions,
      ProxyMetrics metrics,
      Limits limits,
      String runId,
      AtomicInteger openConnections,
      Connector connector,
      boolean awaitingPolicy) {
    this(
        egress,
        addresses,
        resolver,
        decisions,
        metrics,
        limits,
        runId,
        openConnections,
        connector,
        awaitingPolicy,
        null);
  }

  /** The route of {@code host} if the proxy inspects it. */
  java.util.Optional<Inspection.Route> inspected(String host) {
    return inspection == null ? java.util.Optional.empty() : inspection.route(host);
  }

  /** A context serving a policy. */
  ProxyContext(
      EgressDecider egress,
      AddressPolicy addresses,
      HostResolver resolver,
      DecisionLog decisions,
      ProxyMetrics metrics,
      Limits limits,
      String runId,
      AtomicInteger openConnections,
      Connector connector) {
    this(
        egress,
        addresses,
        resolver,
        decisions,
        metrics,
        limits,
        runId,
        openConnections,
        connector,
        false);
  }
}
