package dev.agentsandbox.server.audit;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.agentsandbox.runs.json.Json;
import dev.agentsandbox.server.http.ApiException;
import dev.agentsandbox.server.http.Echo;
import dev.agentsandbox.server.http.Request;
import dev.agentsandbox.server.http.Response;
import dev.agentsandbox.store.AuditHead;
import dev.agentsandbox.store.AuditLog;
import dev.agentsandbox.store.AuditQuery;
import dev.agentsandbox.store.AuditRow;
import dev.agentsandbox.store.Store;
import dev.agentsandbox.store.VerifyResult;
import java.io.StringWriter;
import java.time.Duration;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Queries and exports the audit log ({@code audit.read}). */
public final class AuditEndpoints {
  /** Rows per answer when {@code limit} is not given. */
  static final int DEFAULT_LIMIT = 100;

  /**
   * Rows per export answer; the answer is built in memory, so it is bounded and a shipper pages on
   * with {@code after_id}.
   */
  static final int DEFAULT_EXPORT_LIMIT = 10_000;

  static final int MAX_EXPORT_LIMIT = 100_000;

  private static final Set<String> PARAMS =
      Set.of("type", "agent", "run", "since", "after_id", "limit", "label");
  private static final Pattern RELATIVE = Pattern.compile("([0-9]{1,6})([smhd])");

  private final Store store;
  private final ObjectMapper mapper;

  public AuditEndpoints(Store store, ObjectMapper mapper) {
    this.store = store;
    this.mapper = mapper;
  }

  public Response query(Request request) {
    AuditQuery query = parse(request, DEFAULT_LIMIT, AuditQuery.MAX_LIMIT);
    List<AuditRow> rows = store.audit().query(query);
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("rows", rows.stream().map(AuditLog::toJson).toList());
    body.put("next_after_id", rows.isEmpty() ? null : rows.get(rows.size() - 1).id());
    return Response.json(200, Json.bytes(mapper, body));
  }

  public Response export(Request request) {
    AuditQuery query = parse(request, DEFAULT_EXPORT_LIMIT, MAX_EXPORT_LIMIT);
    StringWriter out = new StringWriter();
    store.audit().export(query, out);
    return Response.text(200, "application/x-ndjson", out.toString());
  }

  /**
   * {@code GET .../audit/verify}: recomputes every row's hash and link, as {@code agent-sandbox
   * audit verify} does, and answers the outcome with the chain head to record elsewhere.
   */
  public Response verify(Request request) {
    request.onlyQueryParams(Set.of());
    // The head is read first: rows appended meanwhile are checked but do not move the head shown.
    AuditHead head = store.audit().head();
    VerifyResult result = store.audit().verify();
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("ok", result.ok());
    body.put("rows_checked", result.rowsChecked());
    body.put("problems", result.problems());
    body.put("head", head.toString());
    return Response.json(200, Json.bytes(mapper, body));
  }

  private static AuditQuery parse(Request request, int defaultLimit, int maxLimit) {
    request.onlyQueryParams(PARAMS);
    Map<String, String> q = request.query();
    return new AuditQuery(
        blankToNull(q.get("type")),
        blankToNull(q.get("agent")),
        blankToNull(q.get("run")),
        since(blankToNull(q.get("since")), Instant.now()),
        afterId(blankToNull(q.get("after_id"))),
        limit(blankToNull(q.get("limit")), defaultLimit, maxLimit),
        labels(blankToNull(q.get("label"))));
  }

  /**
   * {@code label=k=v} or {@code label=k1=v1,k2=v2}: rows (or runs) of runs carrying every one of
   * these labels. Checked with the run label grammar, so a filter that no run could match is
   * refused. The runs list takes the same parameter.
   */
  public static Map<String, String> labels(String raw) {
    if (raw == null) {
      return Map.of();
    }
    Map<String, String> labels = new LinkedHashMap<>();
    for (String pair : raw.split(",", -1)) {
      int eq = pair.indexOf('=');
      if (eq <= 0) {
        throw ApiException.badRequest("label must be key=value pairs separated by commas");
      }
      labels.put(pair.substring(0, eq), pair.substring(eq + 1));
    }
    List<String> problems = dev.agentsandbox.policy.run.RunLabels.problems(labels);
    if (!problems.isEmpty() && problems.stream().noneMatch(p -> p.contains("the sandbox's own"))) {
      throw ApiException.badRequest("label: " + problems.get(0));
    }
    return labels;
  }

  private static String blankToNull(String value) {
    return value == null || value.isBlank() ? null : value;
  }

  /** An ISO-8601 instant, or a relative age such as {@code 15m}, {@code 2h}, {@code 7d}. */
  public static Instant since(String value, Instant now) {
    if (value == null) {
      return null;
    }
    Matcher relative = RELATIVE.matcher(value);
    if (relative.matches()) {
      long amount = Long.parseLong(relative.group(1));
      Duration age =
          switch (relative.group(2)) {
            case "s" -> Duration.ofSeconds(amount);
            case "m" -> Duration.ofMinutes(amount);
            case "h" -> Duration.ofHours(amount);
            default -> Duration.ofDays(amount);
          };
      return now.minus(age);
    }
    try {
      return Instant.parse(value);
    } catch (DateTimeParseException e) {
      throw ApiException.badRequest(
          "since: '"
              + Echo.bounded(value)
              + "' is neither an instant (2026-01-31T12:00:00Z) nor an age (15m, 2h, 7d)");
    }
  }

  private static Long afterId(String value) {
    if (value == null) {
      return null;
    }
    try {
      long id = Long.parseLong(value);
      if (id >= 0) {
        return id;
      }
    } catch (NumberFormatException e) {
      // falls through to the refusal below
    }
    throw ApiException.badRequest("after_id: must be a row id (a whole number from 0)");
  }

  private static int limit(String value, int defaultLimit, int maxLimit) {
    if (value == null) {
      return defaultLimit;
    }
    try {
      int limit = Integer.parseInt(value);
      if (limit >= 1 && limit <= maxLimit) {
        return limit;
      }
    } catch (NumberFormatException e) {
      // falls through to the refusal below
    }
    throw ApiException.badRequest("limit: must be from 1 to " + maxLimit);
  }
}
