package dev.agentsandbox.policy.event;

import dev.agentsandbox.policy.net.Reason;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;

/**
 * One decision of the egress proxy on one connection attempt (a CONNECT tunnel or one plain HTTP
 * request): the one definition of what crosses from the proxy to the control plane. The proxy
 * writes {@link #toTree()} as one JSON line per decision (docs/proxy.md, "Decisions"); the control
 * plane reads each line back with {@link #read} and records it as an {@link EgressRecorded} event.
 * Refusals are reported when they happen; an allowed attempt is reported when it ends, so it
 * carries its byte counts.
 *
 * @param time when the attempt started
 * @param runId the run this proxy serves ({@code --run-id}), empty when not set
 * @param client the client's address and port
 * @param method the HTTP method ({@code CONNECT}, {@code GET}, ...) or {@code -} when none was read
 * @param host the canonical target host, or a bounded echo of what was sent when it did not parse
 * @param port the target port, 0 when none was read
 * @param allowed whether the attempt was allowed
 * @param reason why ({@link Reason#ALLOWED} for an allowed attempt)
 * @param address the checked address that was (or would have been) dialled, null when none was
 *     resolved
 * @param bytesUp bytes from the client to the upstream (tunnel bytes, or HTTP body bytes)
 * @param bytesDown bytes from the upstream to the client
 * @param durationMs milliseconds from the request to the report
 * @param first whether this is the first allowed attempt to this host in this proxy's life
 * @param end how an allowed attempt ended ({@code client-closed}, {@code upstream-closed}, {@code
 *     idle-timeout}, {@code lifetime-exceeded}, {@code error}), null for refusals
 * @param detail a short human explanation of a refusal, null when allowed
 * @param path on an inspected host, the request's normalised path without its query; else null (and
 *     left out of the wire form, so that an opaque tunnel's decision reads as it always did)
 * @param status on an inspected host, the status the upstream answered an allowed request with;
 *     else null
 * @param credential on an inspected host, the name of the credential the proxy set (never its
 *     value); else null
 */
public record DecisionRecord(
    Instant time,
    String runId,
    String client,
    String method,
    String host,
    int port,
    boolean allowed,
    Reason reason,
    String address,
    long bytesUp,
    long bytesDown,
    long durationMs,
    boolean first,
    String end,
    String detail,
    String path,
    Integer status,
    String credential) {
  /** A decision of an opaque tunnel or a plain HTTP request: no path, status or credential. */
  public DecisionRecord(
      Instant time,
      String runId,
      String client,
      String method,
      String host,
      int port,
      boolean allowed,
      Reason reason,
      String address,
      long bytesUp,
      long bytesDown,
      long durationMs,
      boolean first,
      String end,
      String detail) {
    this(
        time,
        runId,
        client,
        method,
        host,
        port,
        allowed,
        reason,
        address,
        bytesUp,
        bytesDown,
        durationMs,
        first,
        end,
        detail,
        null,
        null,
        null);
  }

  public DecisionRecord {
    if (time == null || runId == null || client == null || method == null || host == null) {
      throw new IllegalArgumentException("time, run id, client, method and host are required");
    }
    if (reason == null || allowed != (reason == Reason.ALLOWED)) {
      throw new IllegalArgumentException("an allowed decision has reason ALLOWED, a refusal not");
    }
    if (bytesUp < 0 || bytesDown < 0 || durationMs < 0) {
      throw new IllegalArgumentException("byte counts and duration cannot be negative");
    }
  }

  /** {@code "allow"} or {@code "deny"}, as written on the wire. */
  public String decision() {
    return allowed ? "allow" : "deny";
  }

  /** The same decision marked as the first allow of its host. */
  public DecisionRecord asFirst() {
    return new DecisionRecord(
        time,
        runId,
        client,
        method,
        host,
        port,
        allowed,
        reason,
        address,
        bytesUp,
        bytesDown,
        durationMs,
        true,
        end,
        detail,
        path,
        status,
        credential);
  }

  /**
   * The wire form: every field, always, in this order ({@code null} where a field has no value),
   * snake_case, {@code time} as RFC 3339, {@code reason} by its wire name; then, on an inspected
   * host only, {@code path}, {@code status} and {@code credential}, each where it has a value.
   */
  public Map<String, Object> toTree() {
    return Fields.tree()
        .put("time", time.toString())
        .put("run_id", runId)
        .put("client", client)
        .put("method", method)
        .put("host", host)
        .put("port", port)
        .put("decision", decision())
        .put("reason", reason.wireName())
        .put("address", address)
        .put("bytes_up", bytesUp)
        .put("bytes_down", bytesDown)
        .put("duration_ms", durationMs)
        .put("first", first)
        .put("end", end)
        .put("detail", detail)
        .putIfPresent("path", Optional.ofNullable(path))
        .putIfPresent("status", Optional.ofNullable(status))
        .putIfPresent("credential", Optional.ofNullable(credential))
        .build();
  }

  /**
   * Reads one decision line parsed into plain values. Fields a decision always has are required;
   * unknown fields are ignored.
   *
   * @throws InvalidEventException naming every field that is missing or wrong
   */
  public static DecisionRecord read(Object tree) {
    Fields f = Fields.of("a proxy decision", tree);
    String decision = f.string("decision");
    boolean allowed = decision.equals("allow");
    if (!allowed && !decision.equals("deny") && f.has("decision")) {
      f.problem("decision", "is neither allow nor deny");
    }
    Reason reason = f.named("reason", Reason::fromWireName, Reason.BAD_REQUEST);
    if (f.has("reason") && allowed != (reason == Reason.ALLOWED)) {
      f.problem("reason", "does not go with the decision " + decision);
    }
    Instant time = f.instant("time");
    String runId = f.string("run_id");
    String client = f.string("client");
    String method = f.string("method");
    String host = f.string("host");
    int port = f.integer("port");
    String address = f.optionalString("address").orElse(null);
    long bytesUp = f.whole("bytes_up");
    long bytesDown = f.whole("bytes_down");
    long durationMs = f.whole("duration_ms");
    if (bytesUp < 0 || bytesDown < 0 || durationMs < 0) {
      f.problem("bytes_up", "bytes_down and duration_ms cannot be negative");
    }
    boolean first = f.bool("first");
    String end = f.optionalString("end").orElse(null);
    String detail = f.optionalString("detail").orElse(null);
    String path = f.optionalString("path").orElse(null);
    Integer status = f.optionalInteger("status").orElse(null);
    String credential = f.optionalString("credential").orElse(null);
    f.done();
    return new DecisionRecord(
        time,
        runId,
        client,
        method,
        host,
        port,
        allowed,
        reason,
        address,
        bytesUp,
        bytesDown,
        durationMs,
        first,
        end,
        detail,
        path,
        status,
        credential);
  }
}
