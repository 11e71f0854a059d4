package dev.agentsandbox.server.http;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.agentsandbox.policy.config.ConfigProblem;
import dev.agentsandbox.policy.config.InvalidConfigException;
import dev.agentsandbox.policy.config.Scopes;
import dev.agentsandbox.runs.Refusal;
import dev.agentsandbox.runs.RunNotFoundException;
import dev.agentsandbox.runs.RunRefusedException;
import dev.agentsandbox.runs.json.Json;
import dev.agentsandbox.runs.session.SessionError;
import dev.agentsandbox.runs.session.SessionRefusedException;
import dev.agentsandbox.server.governance.GovernanceException;
import dev.agentsandbox.server.governance.GovernedConfigs;
import dev.agentsandbox.server.governance.InvalidChangeException;
import dev.agentsandbox.server.governance.InvalidIfMatchException;
import dev.agentsandbox.server.governance.StaleVersionException;
import dev.agentsandbox.server.governance.VersionRequiredException;
import dev.agentsandbox.server.governance.WeakeningRefusedException;
import dev.agentsandbox.store.StoreException;
import dev.agentsandbox.store.StoreFullException;
import dev.agentsandbox.store.VersionConflictException;
import java.util.LinkedHashMap;
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
              Map.of("problems", problemRows(invalid.problems())));
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
      case GovernanceException refused -> governance(refused);
      case SessionRefusedException refused -> session(refused);
      case RunNotFoundException notFound ->
          new ApiException(404, "run_not_found", notFound.getMessage());
      case StoreFullException full -> {
        LOG.warn("store full: {}", full.getMessage());
        yield new ApiException(
            507,
            "store_full",
            "the store's disk is full: nothing of this request was saved (free space on the"
                + " control plane's data disk, or the database server's, and retry)");
      }
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

  /**
   * Each governance refusal as the API says it: a malformed change or version (400), a weakening
   * without what it needs (403), a stale version (409), a missing version (428).
   */
  static ApiException governance(GovernanceException refused) {
    return switch (refused) {
      case InvalidChangeException invalid ->
          new ApiException(
              400,
              "invalid_config",
              invalid.getMessage(),
              invalid.problems().isEmpty()
                  ? Map.of()
                  : Map.of("problems", problemRows(invalid.problems())));
      case InvalidIfMatchException ifMatch -> ApiException.badRequest(ifMatch.getMessage());
      case WeakeningRefusedException weakening -> {
        Map<String, Object> details = new LinkedHashMap<>();
        details.put("loosenings", GovernedConfigs.looseningRows(weakening.loosenings()));
        details.put("missing", weakening.missing());
        details.put("impact", weakening.impact());
        if (weakening.missing().contains(Scopes.GOVERNANCE_WEAKEN)) {
          details.put("missing_scope", Scopes.GOVERNANCE_WEAKEN);
        }
        yield new ApiException(403, "weakening_refused", weakening.getMessage(), details);
      }
      case StaleVersionException stale ->
          new ApiException(409, "version_conflict", stale.getMessage());
      case VersionRequiredException required ->
          new ApiException(428, "version_required", required.getMessage());
    };
  }

  private static List<Map<String, Object>> problemRows(List<ConfigProblem> problems) {
    return problems.stream()
        .map(
            problem -> {
              Map<String, Object> row = new LinkedHashMap<>();
              row.put("path", problem.path());
              row.put("message", problem.message());
              return row;
            })
        .toList();
  }

  /**
   * A session's refusal as the API says it: its code, its status, and the finer {@code reason} (why
   * a path or an archive entry was refused) or the {@code run_id} (a session that failed to come
   * up) where it has one.
   */
  static ApiException session(SessionRefusedException refused) {
    Map<String, Object> details = new LinkedHashMap<>();
    refused.reason().ifPresent(reason -> details.put("reason", reason));
    refused.runId().ifPresent(runId -> details.put("run_id", runId));
    return new ApiException(
        sessionStatus(refused.error()), refused.error().code(), refused.getMessage(), details);
  }

  /** The status of each session refusal. */
  static int sessionStatus(SessionError error) {
    return switch (error) {
      case INVALID_REQUEST, INVALID_PATH, PATH_REFUSED, INVALID_ARCHIVE -> 400;
      case STEP_NOT_FOUND, FILE_NOT_FOUND -> 404;
      case NOT_ACCEPTABLE -> 406;
      case NOT_A_SESSION, RUN_ENDED, TOO_MANY_STEPS, STEP_ENDED -> 409;
      case FILE_TOO_LARGE, STDIN_TOO_LARGE -> 413;
      // The backend (its daemon, guest or runner) failed to do what was asked.
      case SESSION_FAILED, STEP_FAILED -> 502;
    };
  }

  /** The status of each refusal: the caller's mistake, the state of things, or this host. */
  static int refusalStatus(Refusal refusal) {
    return switch (refusal) {
      case INVALID_REQUEST, ENV_REFUSED -> 400;
      case AGENT_NOT_LISTED -> 404;
      case SANDBOXES_DISABLED -> 409;
      case TOO_MANY_RUNS -> 429;
      case BACKEND_UNAVAILABLE, RUNTIME_CLASS_REQUIRED, CREDENTIALS_UNAVAILABLE -> 503;
      // The service that mints the credential answered, and its answer was refused.
      case CREDENTIAL_REFUSED -> 502;
    };
  }
}
