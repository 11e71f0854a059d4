package dev.agentsandbox.mcp;

import com.fasterxml.jackson.databind.JsonNode;
import dev.agentsandbox.policy.net.Reason;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/**
 * The egress refusals of a run or a step, each with what its reason means and whether trying again
 * could change anything: a model told why a host was refused stops retrying it (a host that is not
 * on the allow-list is refused every time) and can tell a person what to ask for.
 */
final class EgressRefusals {
  private EgressRefusals() {}

  /** One refused connection as the tools report it. */
  record Refusal(String host, int port, String reason, String explanation, boolean retryMayHelp) {
    /** One line: {@code pypi.org:443 refused (not-allowed): ...}. */
    String line() {
      return host
          + (port > 0 ? ":" + port : "")
          + " refused ("
          + reason
          + "): "
          + explanation
          + (retryMayHelp ? "" : " Retrying will not help.");
    }
  }

  /** The refusals among {@code decisions} (the API's {@code egress} list), in order. */
  static List<Refusal> of(JsonNode decisions) {
    List<Refusal> refusals = new ArrayList<>();
    for (JsonNode decision : decisions) {
      if (!decision.path("decision").asText().equals("deny")) {
        continue;
      }
      String reason = decision.path("reason").asText("unknown");
      Optional<Reason> known =
          Arrays.stream(Reason.values()).filter(r -> r.wireName().equals(reason)).findFirst();
      refusals.add(
          new Refusal(
              decision.path("host").asText("?"),
              decision.path("port").asInt(0),
              reason,
              known.map(EgressRefusals::explanation).orElse("the sandbox's proxy refused it."),
              known.map(EgressRefusals::retryMayHelp).orElse(false)));
    }
    return refusals;
  }

  /** What a refusal's reason means for the workload, in one sentence. */
  static String explanation(Reason reason) {
    return switch (reason) {
      case ALLOWED -> "allowed.";
      case NOT_ALLOWED ->
          "the host is not on the agent's egress allow-list, so this sandbox can never reach it"
              + " (use a listed host, or ask an operator to add this one).";
      case PORT_NOT_ALLOWED ->
          "the host is on the allow-list but not on this port (entries allow only 80 and 443"
              + " unless they name a port).";
      case IP_LITERAL ->
          "the target is an IP address; only host names on the allow-list can be reached.";
      case INVALID_TARGET -> "the target is not a well-formed host name or host:port.";
      case INSTANCE_POLICY ->
          "the organisation's egress policy does not allow this host for the agent, although the"
              + " agent's own list names it.";
      case NON_PUBLIC_ADDRESS ->
          "the name resolves only to private, loopback or metadata addresses, which sandboxes may"
              + " not reach.";
      case DNS_FAILURE ->
          "the proxy could not resolve the name (it does not exist, or DNS failed).";
      case SNI_MISMATCH ->
          "the TLS server name differs from the host asked for (domain fronting is refused).";
      case SNI_MISSING ->
          "a connection to port 443 did not start with a TLS handshake naming the server.";
      case BAD_REQUEST -> "the proxy refused a malformed request.";
      case UPGRADE_REFUSED -> "protocol upgrades (WebSocket, h2c) over plain HTTP are refused.";
      case HEADER_TOO_LARGE -> "the request's headers are larger than the proxy accepts.";
      case TOO_MANY_CONNECTIONS -> "the proxy held its maximum of connections; open fewer at once.";
      case CONNECT_TIMEOUT -> "the host did not accept the connection in time.";
      case CONNECT_FAILED -> "the host refused or reset the connection.";
      case POLICY_PENDING -> "the sandbox's proxy had no policy yet.";
      case METHOD_NOT_ALLOWED ->
          "the host is inspected and no rule of the agent's allows this request's method there.";
      case PATH_NOT_ALLOWED ->
          "the host is inspected and no rule of the agent's allows this path (or the path could"
              + " be read two ways: encoded slashes, path parameters, broken escapes).";
      case AUTHORITY_MISMATCH ->
          "the request's Host or :authority names another host than the connection was opened"
              + " for.";
      case UPSTREAM_CERTIFICATE ->
          "the inspected host's real certificate did not verify (expired, for another name, or"
              + " from an authority the proxy does not trust).";
      case UPSTREAM_TLS -> "the TLS handshake with the inspected host failed.";
    };
  }

  /** Whether the same attempt could succeed later: only when the refusal was about the moment. */
  static boolean retryMayHelp(Reason reason) {
    return switch (reason) {
      case DNS_FAILURE,
          TOO_MANY_CONNECTIONS,
          CONNECT_TIMEOUT,
          CONNECT_FAILED,
          POLICY_PENDING,
          UPSTREAM_TLS ->
          true;
      case ALLOWED,
          NOT_ALLOWED,
          PORT_NOT_ALLOWED,
          IP_LITERAL,
          INVALID_TARGET,
          INSTANCE_POLICY,
          NON_PUBLIC_ADDRESS,
          SNI_MISMATCH,
          SNI_MISSING,
          BAD_REQUEST,
          UPGRADE_REFUSED,
          HEADER_TOO_LARGE,
          METHOD_NOT_ALLOWED,
          PATH_NOT_ALLOWED,
          AUTHORITY_MISMATCH,
          UPSTREAM_CERTIFICATE ->
          false;
    };
  }
}
