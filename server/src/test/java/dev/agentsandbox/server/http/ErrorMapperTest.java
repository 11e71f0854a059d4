package dev.agentsandbox.server.http;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.agentsandbox.policy.config.ConfigProblem;
import dev.agentsandbox.policy.config.Loosening;
import dev.agentsandbox.policy.config.Scopes;
import dev.agentsandbox.runs.json.Json;
import dev.agentsandbox.runs.session.SessionError;
import dev.agentsandbox.runs.session.SessionRefusedException;
import dev.agentsandbox.server.governance.InvalidChangeException;
import dev.agentsandbox.server.governance.InvalidIfMatchException;
import dev.agentsandbox.server.governance.StaleVersionException;
import dev.agentsandbox.server.governance.VersionRequiredException;
import dev.agentsandbox.server.governance.WeakeningRefusedException;
import dev.agentsandbox.store.StoreFullException;
import dev.agentsandbox.store.UnableToAccessStoreException;
import dev.agentsandbox.store.VersionConflictException;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Each domain exception of governance (and the store's save-time conflict) as the API answers it:
 * status, error code, message (first, after the error code) and the fields beside them.
 */
class ErrorMapperTest {
  private static final ObjectMapper MAPPER = Json.mapper();
  private static final Loosening TURNED_ON =
      new Loosening("enabled", Loosening.Kind.ENABLED_TURNED_ON, "sandboxes can now be launched");

  static Stream<Arguments> mappings() {
    return Stream.of(
        Arguments.of(
            "a full store disk is 507 store_full, without the store's own words",
            new StoreFullException(
                "save configuration agent-sandbox in the SQLite store /data/store.db: the disk is"
                    + " full ([SQLITE_FULL] Insertion failed because database is full)",
                null),
            507,
            "{\"error\":\"store_full\",\"message\":\"the store's disk is full: nothing of this"
                + " request was saved (free space on the control plane's data disk, or the"
                + " database server's, and retry)\"}"),
        Arguments.of(
            "any other store failure is 503 store_unavailable",
            new UnableToAccessStoreException("read configuration: connection refused", null),
            503,
            "{\"error\":\"store_unavailable\",\"message\":\"reach the store: it failed or is"
                + " unreachable (see the server log; /readyz tells when it is back)\"}"),
        Arguments.of(
            "a body that is not a change is 400 invalid_config without problems",
            new InvalidChangeException("the body must be a JSON object", List.of()),
            400,
            "{\"error\":\"invalid_config\",\"message\":\"the body must be a JSON object\"}"),
        Arguments.of(
            "a malformed field is 400 invalid_config with each problem at its path",
            new InvalidChangeException(
                "reason: must be a string",
                List.of(new ConfigProblem("reason", "must be a string"))),
            400,
            "{\"error\":\"invalid_config\",\"message\":\"reason: must be a string\","
                + "\"problems\":[{\"path\":\"reason\",\"message\":\"must be a string\"}]}"),
        Arguments.of(
            "an unusable If-Match is 400 invalid_request",
            new InvalidIfMatchException("If-Match must be the ETag from GET"),
            400,
            "{\"error\":\"invalid_request\",\"message\":\"If-Match must be the ETag from GET\"}"),
        Arguments.of(
            "a weakening without the scope is 403 weakening_refused naming the missing scope",
            new WeakeningRefusedException(
                "update agent-sandbox: no",
                List.of(TURNED_ON),
                List.of(Scopes.GOVERNANCE_WEAKEN, "reason"),
                java.util.Map.of("agents_unchanged", 0)),
            403,
            "{\"error\":\"weakening_refused\",\"message\":\"update agent-sandbox: no\","
                + "\"loosenings\":[{\"path\":\"enabled\",\"kind\":\"enabled_turned_on\","
                + "\"detail\":\"sandboxes can now be launched\"}],"
                + "\"missing\":[\"governance.weaken\",\"reason\"],"
                + "\"impact\":{\"agents_unchanged\":0},"
                + "\"missing_scope\":\"governance.weaken\"}"),
        Arguments.of(
            "a weakening without a reason is 403 weakening_refused with no missing_scope",
            new WeakeningRefusedException(
                "update agent-sandbox: no",
                List.of(TURNED_ON),
                List.of("reason"),
                java.util.Map.of("agents_unchanged", 0)),
            403,
            "{\"error\":\"weakening_refused\",\"message\":\"update agent-sandbox: no\","
                + "\"loosenings\":[{\"path\":\"enabled\",\"kind\":\"enabled_turned_on\","
                + "\"detail\":\"sandboxes can now be launched\"}],\"missing\":[\"reason\"],"
                + "\"impact\":{\"agents_unchanged\":0}}"),
        Arguments.of(
            "a stale version found before saving is 409 version_conflict",
            new StaleVersionException("egress-policy", 2, 3),
            409,
            "{\"error\":\"version_conflict\",\"message\":\"update egress-policy: you sent version 2"
                + " but the current one is 3 (GET it again, re-apply your change and send the new"
                + " version)\"}"),
        Arguments.of(
            "a conflict found while saving is 409 version_conflict too",
            new VersionConflictException("agent-sandbox", 1, 2),
            409,
            "{\"error\":\"version_conflict\",\"message\":\"save the document: someone else saved a"
                + " newer version since it was read (save configuration agent-sandbox: version 1"
                + " was expected but the current version is 2 (read the configuration again,"
                + " reapply the change and retry); GET it again, re-apply your change and send the"
                + " new version)\"}"),
        Arguments.of(
            "a change without the version read is 428 version_required",
            new VersionRequiredException("agent-sandbox", 4),
            428,
            "{\"error\":\"version_required\",\"message\":\"update agent-sandbox: send the version"
                + " you read (If-Match: \\\"4\\\" or a \\\"version\\\" field) so that no one's"
                + " change is silently overwritten\"}"),
        Arguments.of(
            "a path found to be a link is 400 path_refused with its reason",
            new SessionRefusedException(
                SessionError.PATH_REFUSED, "put /workspace/up/x: a link", "symlink", null),
            400,
            "{\"error\":\"path_refused\",\"message\":\"put /workspace/up/x: a link\",\"reason\":\"symlink\"}"),
        Arguments.of(
            "a session that did not come up is 502 session_failed naming its run",
            new SessionRefusedException(
                SessionError.SESSION_FAILED, "open: no sandbox", null, "r1"),
            502,
            "{\"error\":\"session_failed\",\"message\":\"open: no sandbox\",\"run_id\":\"r1\"}"),
        Arguments.of(
            "stdin over the cap is 413 stdin_too_large",
            new SessionRefusedException(SessionError.STDIN_TOO_LARGE, "stdin is 17 bytes"),
            413,
            "{\"error\":\"stdin_too_large\",\"message\":\"stdin is 17 bytes\"}"));
  }

  /** Every session refusal has a status, and the one a client can tell apart by its code. */
  @org.junit.jupiter.api.Test
  void everySessionErrorHasItsOwnCodeAndAStatusAClientCanActOn() {
    java.util.Set<String> codes = new java.util.HashSet<>();
    for (SessionError error : SessionError.values()) {
      int status = ErrorMapper.sessionStatus(error);
      assertThat(status).as(error.name()).isBetween(400, 599);
      assertThat(codes.add(error.code())).as("%s's code is its own", error).isTrue();
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("mappings")
  void mapsEachDomainExceptionToItsStatusAndBody(
      String name, RuntimeException error, int status, String body) throws IOException {
    Response response = new ErrorMapper(MAPPER).toResponse(error);
    assertThat(response.status()).isEqualTo(status);
    String actual = new String(response.body(), java.nio.charset.StandardCharsets.UTF_8);
    JsonNode actualTree = MAPPER.readTree(actual);
    JsonNode expectedTree = MAPPER.readTree(body);
    assertThat(actualTree).as(actual).isEqualTo(expectedTree);
    assertThat(fieldNames(actualTree).subList(0, 2)).as(actual).containsExactly("error", "message");
  }

  private static List<String> fieldNames(JsonNode node) {
    List<String> names = new ArrayList<>();
    node.fieldNames().forEachRemaining(names::add);
    return names;
  }
}
