package dev.agentsandbox.server.http;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.agentsandbox.policy.config.InvalidConfigException;
import dev.agentsandbox.runs.Refusal;
import dev.agentsandbox.runs.RunNotFoundException;
import dev.agentsandbox.runs.RunRefusedException;
import dev.agentsandbox.store.StoreException;
import dev.agentsandbox.store.VersionConflictException;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one place that maps exceptions to HTTP status and the {@code {"error", "message"}} body.
 * Messages of unexpected exceptions never reach the client: they may hold internals.
 */
public final class ErrorMapper {
  private static final Logger LOG = LoggerFactory.getLogger(ErrorMapper.class);

  private final ObjectMapper mapper;

  public ErrorMapper(ObjectMapper mapper) {
    this.mapper = mapper;
  }

  /** The API's view of any exception. */
  public ApiException toApi(Throwable error) {
    return switch (error) {
      case ApiException api -> api;
      case InvalidConfigException invalid ->
          new ApiException(
              400,
              "invalid_config",
              "validate the document: " + invalid.getMessage(),
              Map.of(
                  "problems",
                  invalid.problems().stream()
                      .map(p -> Map.of("path", p.path(), "message", p.message()))
                      .toList()));
      case VersionConflictException conflict ->
          new ApiException(
              409,
              "version_conflict",
              "save the document: someone else saved a newer version since it was read ("
                  + conflict.getMessage()
                  + "; GET it again, re-apply your change and send the new version)");
      case RunRefusedException refused ->
          new ApiException(
              refusalStatus(refused.refusal()),
              refused.refusal().code(),
              refused.getMessage(),
              refused.problems().isEmpty() ? Map.of() : Map.of("problems", refused.problems()));
      case RunNotFoundException notFound ->
          new ApiException(404, "run_not_found", notFound.getMessage());
      case StoreException store -> {
        LOG.warn("store failure: {}", store.getMessage());
        yield new ApiException(
            503,
            "store_unavailable",
            "reach the store: it failed or is unreachable (see the server log; /readyz tells when"
                + " it is back)");
      }
      default -> {
        LOG.error("unexpected failure handling a request", error);
        yield new ApiException(500, "internal_error", "internal error (see the server log)");
      }
    };
  }

  /** The response for an exception. */
  public Response toResponse(Throwable error) {
    ApiException api = toApi(error);
    ObjectNode body = mapper.createObjectNode();
    body.put("error", api.code());
    body.put("message", api.getMessage());
    api.details().forEach((name, value) -> body.set(name, mapper.valueToTree(value)));
    Response response = Response.json(api.status(), Json.bytes(mapper, body));
    if (api.status() == 401) {
      response = response.withHeader("WWW-Authenticate", "Bearer realm=\"agent-sandbox\"");
    }
    if (api.status() == 405 && api.details().get("allow") instanceof List<?> allow) {
      response =
          response.withHeader(
              "Allow", String.join(", ", allow.stream().map(String::valueOf).toList()));
    }
    return response;
  }

  /** The status of each refusal: the caller's mistake, the state of things, or this host. */
  static int refusalStatus(Refusal refusal) {
    return switch (refusal) {
      case INVALID_REQUEST, ENV_REFUSED -> 400;
      case AGENT_NOT_LISTED -> 404;
      case SANDBOXES_DISABLED -> 409;
      case TOO_MANY_RUNS -> 429;
      case BACKEND_UNAVAILABLE, RUNTIME_CLASS_REQUIRED -> 503;
    };
  }
}
