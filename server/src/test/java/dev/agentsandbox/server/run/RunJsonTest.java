package dev.agentsandbox.server.run;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.agentsandbox.backend.Isolation;
import dev.agentsandbox.runs.RunView;
import dev.agentsandbox.runs.json.Json;
import dev.agentsandbox.store.RunRecord;
import dev.agentsandbox.store.RunStatus;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * The run JSON to the byte: field names, their order and their nulls are the API's contract, which
 * clients (the CLI among them) read.
 */
class RunJsonTest {
  private static final ObjectMapper MAPPER = Json.mapper();
  private static final Instant CREATED = Instant.parse("2026-01-01T00:00:00Z");
  private static final Instant EXPIRES = Instant.parse("2026-01-01T01:00:00Z");

  private final RunJson render = new RunJson(MAPPER);

  @Test
  void aStoredRunShowsItsNullsAndNoLiveFields() throws Exception {
    RunRecord record = record(RunStatus.PENDING, null, null, null);
    RunView view =
        new RunView(
            record,
            Optional.empty(),
            "",
            List.of(node("{\"decision\":\"deny\",\"host\":\"x.test\",\"reason\":\"not-allowed\"}")),
            false,
            0);

    assertThat(MAPPER.writeValueAsString(render.run(view)))
        .isEqualTo(
            "{\"run_id\":\"r1\",\"kind\":\"run\",\"agent\":\"helper\",\"status\":\"pending\",\"end\":null,"
                + "\"exit_status\":null,\"backend\":\"docker\",\"runtime\":\"runsc\","
                + "\"command\":[\"sh\",\"-c\",\"echo hi\"],\"created_at\":\"2026-01-01T00:00:00Z\","
                + "\"started_at\":null,\"ended_at\":null,\"expires_at\":\"2026-01-01T01:00:00Z\","
                + "\"output_tail\":\"\",\"egress\":[{\"decision\":\"deny\",\"host\":\"x.test\","
                + "\"reason\":\"not-allowed\"}],\"egress_complete\":false}");
  }

  @Test
  void aLiveRunShowsIsolationDetailBytesAndWhatItDidNotList() throws Exception {
    Instant ended = CREATED.plusSeconds(5);
    RunRecord record = record(RunStatus.EXITED, ended, 0, "exit");
    RunView view =
        new RunView(
            record,
            Optional.of(new RunView.Live(Isolation.GVISOR, "tearing down", 3)),
            "hi\n",
            List.of(),
            false,
            2);

    assertThat(MAPPER.writeValueAsString(render.run(view)))
        .isEqualTo(
            "{\"run_id\":\"r1\",\"kind\":\"run\",\"agent\":\"helper\",\"status\":\"exited\",\"end\":\"exit\","
                + "\"exit_status\":0,\"backend\":\"docker\",\"runtime\":\"runsc\","
                + "\"command\":[\"sh\",\"-c\",\"echo hi\"],\"created_at\":\"2026-01-01T00:00:00Z\","
                + "\"started_at\":\"2026-01-01T00:00:05Z\",\"ended_at\":\"2026-01-01T00:00:05Z\","
                + "\"expires_at\":\"2026-01-01T01:00:00Z\",\"isolation\":\"gvisor\","
                + "\"detail\":\"tearing down\",\"output_tail\":\"hi\\n\",\"output_bytes\":3,"
                + "\"egress\":[],\"egress_complete\":false,\"egress_not_listed\":2}");
  }

  @Test
  void anEmptyDetailIsLeftOut() {
    RunView view =
        new RunView(
            record(RunStatus.PENDING, null, null, null),
            Optional.of(new RunView.Live(Isolation.CONTAINER, "", 0)),
            "",
            List.of(),
            true,
            0);

    JsonNode json = render.run(view);

    assertThat(json.has("detail")).isFalse();
    assertThat(json.has("egress_not_listed")).isFalse();
    assertThat(json.get("isolation").asText()).isEqualTo("container");
  }

  @Test
  void theListShowsOneLinePerRunWithANullEnd() throws Exception {
    assertThat(
            MAPPER.writeValueAsString(
                render.list(List.of(record(RunStatus.PENDING, null, null, null)))))
        .isEqualTo(
            "{\"runs\":[{\"run_id\":\"r1\",\"kind\":\"run\",\"agent\":\"helper\",\"status\":\"pending\","
                + "\"exit_status\":null,\"backend\":\"docker\","
                + "\"created_at\":\"2026-01-01T00:00:00Z\",\"started_at\":null,"
                + "\"ended_at\":null}]}");
  }

  @Test
  void aSessionShowsItsKindIdleTimeStepsAndANullCommand() throws Exception {
    RunRecord session =
        new RunRecord(
            "s1",
            "helper",
            "docker",
            "runsc",
            RunStatus.RUNNING,
            com.fasterxml.jackson.databind.node.NullNode.getInstance(),
            CREATED,
            CREATED,
            null,
            null,
            null,
            null,
            EXPIRES,
            "instance",
            dev.agentsandbox.store.RunKind.SESSION,
            600);
    RunView view =
        new RunView(
            session,
            Optional.of(new RunView.Live(Isolation.GVISOR, "", 12)),
            "built\n",
            List.of(),
            true,
            0,
            Optional.of(new RunView.Session(600, CREATED.plusSeconds(600), 3, Optional.of(true))));

    assertThat(MAPPER.writeValueAsString(render.run(view)))
        .isEqualTo(
            "{\"run_id\":\"s1\",\"kind\":\"session\",\"agent\":\"helper\",\"status\":\"running\","
                + "\"end\":null,\"exit_status\":null,\"backend\":\"docker\",\"runtime\":\"runsc\","
                + "\"command\":null,\"created_at\":\"2026-01-01T00:00:00Z\","
                + "\"started_at\":\"2026-01-01T00:00:00Z\",\"ended_at\":null,"
                + "\"expires_at\":\"2026-01-01T01:00:00Z\",\"isolation\":\"gvisor\","
                + "\"idle_seconds\":600,\"idle_expires_at\":\"2026-01-01T00:10:00Z\",\"steps\":3,"
                + "\"warm\":true,\"output_tail\":\"built\\n\",\"output_bytes\":12,\"egress\":[],"
                + "\"egress_complete\":true}");
  }

  private static RunRecord record(
      RunStatus status, Instant endedAt, Integer exitStatus, String end) {
    return new RunRecord(
        "r1",
        "helper",
        "docker",
        "runsc",
        status,
        MAPPER.valueToTree(List.of("sh", "-c", "echo hi")),
        CREATED,
        endedAt,
        endedAt,
        exitStatus,
        end,
        null,
        EXPIRES,
        "instance");
  }

  private static java.util.Map<String, Object> node(String json) throws Exception {
    return MAPPER.readValue(json, new com.fasterxml.jackson.core.type.TypeReference<>() {});
  }
}
