package dev.agentsandbox.runs.audit;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.agentsandbox.policy.event.CredentialsIssued;
import dev.agentsandbox.policy.event.EgressDenialsCounted;
import dev.agentsandbox.policy.event.EgressRecorded;
import dev.agentsandbox.policy.event.EventType;
import dev.agentsandbox.policy.event.KillRequested;
import dev.agentsandbox.policy.event.Launched;
import dev.agentsandbox.policy.event.RunEvent;
import dev.agentsandbox.policy.event.Started;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * One run's audit trail answering the playbook's four questions — who launched it, what ran, what
 * was allowed and denied, when and how it ended — built from its typed events, with every row in
 * order and the chain statement (docs/runs.md, "The timeline"). The server serves {@link #toJson};
 * the CLI reads it back with {@link #read} and answers from the same events.
 *
 * @param run what the run's record says
 * @param events every row of the run, oldest first
 * @param chain whether the audit chain verifies up to the newest of them
 */
public record RunTimeline(Run run, List<RecordedEvent> events, Chain chain) {

  /**
   * The run as its record has it.
   *
   * @param runId its id
   * @param agent its agent
   * @param status its status's wire name
   * @param labels its labels
   * @param endReason how it ended, null while it runs
   * @param exitStatus its exit status, when there is one
   * @param endedAt when it ended, null while it runs
   * @param kind {@code run} or {@code session}
   */
  public record Run(
      String runId,
      String agent,
      String status,
      SortedMap<String, String> labels,
      String endReason,
      Integer exitStatus,
      Instant endedAt,
      String kind) {
    /** The kind of a session's timeline. */
    public static final String SESSION = "session";

    public Run {
      Objects.requireNonNull(runId, "runId");
      Objects.requireNonNull(kind, "kind");
      Objects.requireNonNull(agent, "agent");
      Objects.requireNonNull(status, "status");
      labels = java.util.Collections.unmodifiableSortedMap(new TreeMap<>(labels));
    }
  }

  /**
   * The chain statement.
   *
   * @param verified whether the chain verifies up to {@code upToId}
   * @param upToId the run's newest row, absent when it has none
   * @param upToHash that row's hash
   * @param rowsChecked rows read to decide
   * @param walkedFromId the row the walk started after (0: the chain's start)
   * @param problems what is wrong, each naming its row
   * @param note why nothing could be verified
   */
  public record Chain(
      boolean verified,
      OptionalLong upToId,
      Optional<String> upToHash,
      long rowsChecked,
      long walkedFromId,
      List<String> problems,
      Optional<String> note) {
    public Chain {
      Objects.requireNonNull(upToId, "upToId");
      Objects.requireNonNull(upToHash, "upToHash");
      problems = List.copyOf(problems);
      Objects.requireNonNull(note, "note");
    }

    static Chain nothing(String note) {
      return new Chain(
          false, OptionalLong.empty(), Optional.empty(), 0, 0, List.of(), Optional.of(note));
    }
  }

  /**
   * A row read as the event of the kind asked for.
   *
   * @param row the row
   * @param event its event
   */
  public record Stamped<T extends RunEvent>(RecordedEvent row, T event) {}

  public RunTimeline {
    Objects.requireNonNull(run, "run");
    events = List.copyOf(events);
    Objects.requireNonNull(chain, "chain");
  }

  /** Every row that reads as a {@code kind}, oldest first. */
  public <T extends RunEvent> List<Stamped<T>> all(Class<T> kind) {
    List<Stamped<T>> out = new ArrayList<>();
    for (RecordedEvent row : events) {
      row.as(kind).ifPresent(event -> out.add(new Stamped<>(row, event)));
    }
    return out;
  }

  /** The newest row that reads as a {@code kind}. */
  public <T extends RunEvent> Optional<Stamped<T>> last(Class<T> kind) {
    List<Stamped<T>> all = all(kind);
    return all.isEmpty() ? Optional.empty() : Optional.of(all.get(all.size() - 1));
  }

  /** The newest row of {@code type}, whichever of its events it reads as. */
  public Optional<Stamped<RunEvent>> last(EventType type) {
    Stamped<RunEvent> found = null;
    for (RecordedEvent row : events) {
      if (row.event().isPresent() && row.event().get().type() == type) {
        found = new Stamped<>(row, row.event().get());
      }
    }
    return Optional.ofNullable(found);
  }

  /** The launch row: who launched the run and what it launched. */
  public Optional<Stamped<Launched>> launch() {
    return last(Launched.class);
  }

  /** What the sandbox really ran under, once started. */
  public Optional<Stamped<Started>> started() {
    return last(Started.class);
  }

  /** The credentials the run was issued, by name, source and expiry. */
  public List<CredentialsIssued.Credential> credentials() {
    return last(CredentialsIssued.class).map(s -> s.event().credentials()).orElse(List.of());
  }

  /** The first allowed connection to each host. */
  public List<Stamped<EgressRecorded>> allowed() {
    return all(EgressRecorded.class).stream().filter(s -> s.event().allowed()).toList();
  }

  /** Each refusal written in full. */
  public List<Stamped<EgressRecorded>> denied() {
    return all(EgressRecorded.class).stream().filter(s -> !s.event().allowed()).toList();
  }

  /** The refusals past the run's limits for rows in full, counted. */
  public List<Stamped<EgressDenialsCounted>> counted() {
    return all(EgressDenialsCounted.class);
  }

  /** Every refusal the rows account for, in full or counted. */
  public long deniedTotal() {
    return denied().size() + counted().stream().mapToLong(s -> s.event().count()).sum();
  }

  // --- the document ----------------------------------------------------------------------------

  /** The timeline document {@code GET .../runs/{id}/timeline} answers (docs/api.md). */
  public ObjectNode toJson(ObjectMapper json) {
    ObjectNode body = json.createObjectNode();
    body.put("run_id", run.runId());
    body.put("kind", run.kind());
    body.put("agent", run.agent());
    body.put("status", run.status());
    ObjectNode labels = body.putObject("labels");
    run.labels().forEach(labels::put);
    ObjectNode who = body.putObject("launched_by");
    launch()
        .ifPresent(
            l -> {
              who.put("token", l.row().actor());
              who.put("at", l.row().time().toString());
              who.put("audit_id", l.row().id());
            });
    body.set("what_ran", whatRan(json));
    ArrayNode list = body.putArray("events");
    for (RecordedEvent row : events) {
      ObjectNode event = list.addObject();
      event.put("id", row.id());
      event.put("time", row.time().toString());
      event.put("type", row.type());
      event.put("actor", row.actor());
      event.set("data", row.data());
      row.problem().ifPresent(p -> event.put("problem", p));
    }
    ObjectNode egress = body.putObject("egress");
    ArrayNode allowedOut = egress.putArray("allowed");
    allowed().forEach(s -> allowedOut.add(decision(s)));
    ArrayNode deniedOut = egress.putArray("denied");
    denied().forEach(s -> deniedOut.add(decision(s)));
    if (!counted().isEmpty()) {
      ArrayNode countedOut = egress.putArray("counted");
      counted().forEach(s -> countedOut.add(stamp(json, s, "detail")));
      egress.put("denied_total", deniedTotal());
    }
    if (run.kind().equals(Run.SESSION)) {
      SessionTimeline.add(body, this, json);
    }
    body.set("end", end(json));
    body.set("chain", chainJson(json));
    return body;
  }

  private ObjectNode whatRan(ObjectMapper json) {
    ObjectNode what = json.createObjectNode();
    launch()
        .ifPresent(
            l -> {
              Launched launched = l.event();
              what.put("image", launched.image());
              what.set("command", PlainJson.node(launched.command()));
              what.put("backend", launched.backend());
              what.put("runtime", launched.runtime());
              what.put("isolation", launched.isolation());
              what.set("effective_allow", PlainJson.node(launched.effectiveAllow()));
              what.put("ttl_seconds", launched.ttlSeconds());
              what.set("resources", PlainJson.node(launched.toTree().get("resources")));
              what.set("env_keys", PlainJson.node(launched.envKeys()));
            });
    ArrayNode credentials = what.putArray("credentials");
    last(CredentialsIssued.class)
        .ifPresent(
            c -> PlainJson.node(c.event().toTree().get("credentials")).forEach(credentials::add));
    started()
        .ifPresent(
            s -> {
              what.put("runtime", s.event().runtime());
              s.event().imageId().ifPresent(id -> what.put("image_id", id));
              s.event().proxyPool().ifPresent(id -> what.put("proxy_pool", id));
              what.put("started_at", s.row().time().toString());
            });
    return what;
  }

  private ObjectNode end(ObjectMapper json) {
    ObjectNode end = json.createObjectNode();
    end.put("status", run.status());
    end.put("end_reason", run.endReason());
    if (run.exitStatus() != null) {
      end.put("exit_status", run.exitStatus());
    }
    end.put("ended_at", run.endedAt() == null ? null : run.endedAt().toString());
    last(KillRequested.class)
        .ifPresent(
            k -> {
              ObjectNode killed = stampOnly(json, k.row());
              killed.put("token", k.row().actor());
              end.set("killed_by", killed);
            });
    last(EventType.CLOSE)
        .ifPresent(
            c -> {
              ObjectNode closed = stampOnly(json, c.row());
              closed.put("token", c.row().actor());
              end.set("closed_by", closed);
            });
    last(EventType.IDLE).ifPresent(s -> end.set("idle", stamp(json, s, "detail")));
    last(EventType.TIMEOUT).ifPresent(s -> end.set("timeout", stamp(json, s, "detail")));
    last(EventType.FAILURE).ifPresent(s -> end.set("failure", stamp(json, s, "detail")));
    last(EventType.ARTIFACTS).ifPresent(s -> end.set("artifacts", stamp(json, s, "detail")));
    last(EventType.TEARDOWN).ifPresent(s -> end.set("teardown", stamp(json, s, "detail")));
    last(EventType.CREDENTIALS_REVOKE)
        .ifPresent(s -> end.set("revocation", stamp(json, s, "detail")));
    return end;
  }

  private static ObjectNode decision(Stamped<EgressRecorded> s) {
    ObjectNode decision = (ObjectNode) PlainJson.node(s.event().toTree());
    decision.put("audit_id", s.row().id());
    // The row's time, as the timeline always gave it; the proxy's own is in the event's row.
    decision.put("time", s.row().time().toString());
    return decision;
  }

  private static ObjectNode stampOnly(ObjectMapper json, RecordedEvent row) {
    ObjectNode node = json.createObjectNode();
    node.put("audit_id", row.id());
    node.put("time", row.time().toString());
    return node;
  }

  private static ObjectNode stamp(ObjectMapper json, Stamped<? extends RunEvent> s, String field) {
    ObjectNode node = stampOnly(json, s.row());
    node.set(field, PlainJson.node(s.event().toTree()));
    return node;
  }

  private ObjectNode chainJson(ObjectMapper json) {
    ObjectNode node = json.createObjectNode();
    node.put("verified", chain.verified());
    chain.note().ifPresent(n -> node.put("note", n));
    if (chain.upToId().isPresent()) {
      node.put("up_to_id", chain.upToId().getAsLong());
      node.put("up_to_hash", chain.upToHash().orElse(null));
      node.put("rows_checked", chain.rowsChecked());
      if (chain.walkedFromId() > 0) {
        node.put("walked_from_id", chain.walkedFromId());
      }
      ArrayNode problems = node.putArray("problems");
      chain.problems().forEach(problems::add);
    }
    return node;
  }

  /**
   * Reads a timeline document back: the run's header, its rows (each read as its event by the same
   * vocabulary) and the chain statement; the answers are rebuilt from the rows, never taken from
   * the document's own summary.
   *
   * @throws IllegalArgumentException when the document is not a timeline
   */
  public static RunTimeline read(JsonNode doc) {
    if (!doc.path("run_id").isTextual() || !doc.path("events").isArray()) {
      throw new IllegalArgumentException(
          "read a run's timeline: the answer has no run_id or events (is this a timeline?)");
    }
    SortedMap<String, String> labels = new TreeMap<>();
    doc.path("labels").properties().forEach(e -> labels.put(e.getKey(), e.getValue().asText()));
    JsonNode end = doc.path("end");
    Run run =
        new Run(
            doc.path("run_id").asText(),
            doc.path("agent").asText(),
            doc.path("status").asText(),
            labels,
            end.path("end_reason").isTextual() ? end.path("end_reason").asText() : null,
            end.path("exit_status").isInt() ? end.path("exit_status").asInt() : null,
            end.path("ended_at").isTextual() ? Instant.parse(end.path("ended_at").asText()) : null,
            doc.path("kind").asText("run"));
    List<RecordedEvent> events = new ArrayList<>();
    doc.path("events").forEach(e -> events.add(RecordedEvent.fromJson(e)));
    JsonNode c = doc.path("chain");
    List<String> problems = new ArrayList<>();
    c.path("problems").forEach(p -> problems.add(p.asText()));
    Chain chain =
        new Chain(
            c.path("verified").asBoolean(false),
            c.path("up_to_id").canConvertToLong()
                ? OptionalLong.of(c.path("up_to_id").asLong())
                : OptionalLong.empty(),
            c.path("up_to_hash").isTextual()
                ? Optional.of(c.path("up_to_hash").asText())
                : Optional.empty(),
            c.path("rows_checked").asLong(0),
            c.path("walked_from_id").asLong(0),
            problems,
            c.path("note").isTextual() ? Optional.of(c.path("note").asText()) : Optional.empty());
    return new RunTimeline(run, events, chain);
  }
}
