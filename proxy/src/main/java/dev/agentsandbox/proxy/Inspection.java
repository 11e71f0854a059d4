package dev.agentsandbox.proxy;

import dev.agentsandbox.policy.config.Injection;
import dev.agentsandbox.policy.config.InspectedHost;
import dev.agentsandbox.policy.http.RequestPath;
import dev.agentsandbox.policy.http.RequestRules;
import dev.agentsandbox.policy.net.Reason;
import io.netty.handler.codec.http2.Http2SecurityUtil;
import io.netty.handler.ssl.ApplicationProtocolConfig;
import io.netty.handler.ssl.ApplicationProtocolNames;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslProvider;
import io.netty.handler.ssl.SupportedCipherSuiteFilter;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import javax.net.ssl.SSLException;

/**
 * What a proxy that inspects hosts holds while it serves: the run's {@link RunCa}, one route per
 * inspected host (its rules, its injected header, the TLS context the workload's client talks to),
 * and the TLS context for the real hosts ({@link UpstreamTls}). Made once, when the policy is put
 * in force. Thread-safe: immutable.
 */
final class Inspection {
  private final RunCa ca;
  private final Map<String, Route> routes;
  private final UpstreamTls upstream;

  private Inspection(RunCa ca, Map<String, Route> routes, UpstreamTls upstream) {
    this.ca = ca;
    this.routes = Map.copyOf(routes);
    this.upstream = upstream;
  }

  /**
   * Makes the run's CA and a certificate for each inspected host.
   *
   * @throws UnableToStartProxyException when a TLS context cannot be made
   */
  static Inspection create(InspectConfig config, String runId, Instant now) {
    RunCa ca =
        RunCa.create(
            runId,
            config.policy().hosts().stream().map(InspectedHost::host).toList(),
            now,
            config.policy().caExpiresAt());
    Map<String, Route> routes = new LinkedHashMap<>();
    for (InspectedHost host : config.policy().hosts()) {
      RunCa.Leaf leaf = ca.issue(host.host(), now);
      SslContext facing;
      try {
        facing =
            SslContextBuilder.forServer(leaf.key(), leaf.certificate(), ca.certificate(), ca.root())
                .sslProvider(SslProvider.JDK)
                .protocols("TLSv1.3", "TLSv1.2")
                .ciphers(Http2SecurityUtil.CIPHERS, SupportedCipherSuiteFilter.INSTANCE)
                .applicationProtocolConfig(
                    new ApplicationProtocolConfig(
                        ApplicationProtocolConfig.Protocol.ALPN,
                        ApplicationProtocolConfig.SelectorFailureBehavior.NO_ADVERTISE,
                        ApplicationProtocolConfig.SelectedListenerFailureBehavior.ACCEPT,
                        ApplicationProtocolNames.HTTP_2,
                        ApplicationProtocolNames.HTTP_1_1))
                .build();
      } catch (SSLException e) {
        throw new UnableToStartProxyException(
            "making the TLS context for inspected host "
                + host.host()
                + " failed: "
                + e.getMessage(),
            e);
      }
      Optional<Injected> injected =
          host.inject().map(i -> new Injected(i, config.values().get(i.credential())));
      routes.put(host.host(), new Route(host.host(), host.rules(), injected, facing));
    }
    return new Inspection(ca, routes, UpstreamTls.create(config.policy().upstreamCa()));
  }

  /** The route of an inspected host, if the host is inspected. */
  Optional<Route> route(String canonicalHost) {
    return Optional.ofNullable(routes.get(canonicalHost));
  }

  /** The run CA's certificate, PEM: what the sandbox is given to trust. */
  String caCertificatePem() {
    return ca.certificatePem();
  }

  RunCa ca() {
    return ca;
  }

  UpstreamTls upstream() {
    return upstream;
  }

  /**
   * One inspected host as the proxy serves it.
   *
   * @param host the canonical host
   * @param rules what requests pass; empty for every request
   * @param injected the header set on every request to it, if any
   * @param facing the TLS context (the run CA's leaf for this host) the workload's client sees
   */
  record Route(
      String host, Optional<RequestRules> rules, Optional<Injected> injected, SslContext facing) {
    /**
     * The verdict on a request's method and target: its path normalised ({@link RequestPath}), then
     * the host's rules; {@code TRACE} and {@code CONNECT} are refused whatever the rules say (an
     * echo of the request's headers, a tunnel inside the tunnel).
     */
    Verdict check(String method, String target) {
      if (method.equals("TRACE") || method.equals("CONNECT")) {
        return Verdict.refused(
            Reason.METHOD_NOT_ALLOWED,
            method + " is never forwarded to an inspected host (an echo, a tunnel)");
      }
      RequestPath path;
      switch (RequestPath.parse(target)) {
        case RequestPath.Ambiguous ambiguous -> {
          return Verdict.refused(Reason.PATH_NOT_ALLOWED, ambiguous.detail());
        }
        case RequestPath.Normalised normalised -> path = normalised.path();
      }
      if (rules.isPresent()) {
        Optional<Reason> refusal = rules.get().refusal(method, path.segments());
        if (refusal.isPresent()) {
          String detail =
              refusal.get() == Reason.METHOD_NOT_ALLOWED
                  ? "no rule of " + host + " allows " + Echo.of(method)
                  : "no rule of " + host + " allows " + method + " on this path";
          return new Verdict(refusal, detail, Optional.of(path));
        }
      }
      return new Verdict(Optional.empty(), "", Optional.of(path));
    }

    @Override
    public String toString() {
      return "Route["
          + host
          + ", rules="
          + rules.map(RequestRules::asStrings)
          + ", injects="
          + injected.map(i -> i.injection().credential())
          + "]";
    }
  }

  /**
   * A request's verdict on a route.
   *
   * @param refusal why it is refused, if it is
   * @param detail the refusal's detail (empty when allowed)
   * @param path the normalised path, when the target normalised
   */
  record Verdict(Optional<Reason> refusal, String detail, Optional<RequestPath> path) {
    static Verdict refused(Reason reason, String detail) {
      return new Verdict(Optional.of(reason), detail, Optional.empty());
    }
  }

  /**
   * A credential set on every request of one route.
   *
   * @param injection which credential, as which header
   * @param value the credential's value (never shown, never logged)
   */
  record Injected(Injection injection, String value) {
    /** The header's whole value: the template with the credential in it. */
    String headerValue() {
      return injection.headerValue(value);
    }

    /** The credential's bytes, which the response scrubber replaces wherever they appear. */
    byte[] secret() {
      return value.getBytes(StandardCharsets.US_ASCII);
    }

    @Override
    public String toString() {
      return "Injected["
          + injection.credential()
          + " as "
          + injection.header()
          + ", value not shown]";
    }
  }
}
