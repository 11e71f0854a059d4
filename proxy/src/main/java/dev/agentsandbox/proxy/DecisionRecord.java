package dev.agentsandbox.proxy;

import com.fasterxml.jackson.annotation.JsonIgnore;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import dev.agentsandbox.policy.net.Reason;
import java.time.Instant;

/**
 * One decision of the proxy on one connection attempt (a CONNECT tunnel or one plain HTTP request),
 * as written to the decisions file and handed to {@link DecisionListener}s. Refusals are reported
 * when they happen; an allowed attempt is reported when it ends, so it carries its byte counts.
 *
 * @param time when the attempt started
 * @param runId the run this proxy serves ({@code --run-id}), empty when not set
 * @param client the client's address and port
 * @param method the HTTP method ({@code CONNECT}, {@code GET}, ...) or {@code -} when none was read
 * @param host the canonical target host, or a bounded echo of what was sent when it did not parse
 * @param port the target port, 0 when none was read
 * @param allowed whether the attempt was allowed
 * @param reason why ({@link Reason#ALLOWED} for an allowed attempt)
 * @param address the checked address that was (or would have been) dialled, when one was resolved
 * @param bytesUp bytes from the client to the upstream (tunnel bytes, or HTTP body bytes)
 * @param bytesDown bytes from the upstream to the client
 * @param durationMs milliseconds from the request to the report
 * @param first whether this is the first allowed attempt to this host in this proxy's life
 * @param end how an allowed attempt ended ({@code client-closed}, {@code upstream-closed}, {@code
 *     idle-timeout}, {@code lifetime-exceeded}, {@code error}), null for refusals
 * @param detail a short human explanation of a refusal, null when allowed
 * @param path on an inspected host, the request's normalised path without its query; else null (and
 *     left out of the JSON, so that a decision of an opaque tunnel reads as it always did)
 * @param status on an inspected host, the status the upstream answered an allowed request with
 * @param credential on an inspected host, the name of the credential the proxy set (never its
 *     value)
 */
@JsonInclude(JsonInclude.Include.ALWAYS)
@JsonPropertyOrder({
  "time",
  "run_id",
  "client",
  "method",
  "host",
  "port",
  "decision",
  "reason",
  "address",
  "bytes_up",
  "bytes_down",
  "duration_ms",
  "first",
  "end",
  "detail",
  "path",
  "status",
  "credential"
})
public record DecisionRecord(
    @JsonProperty("time") Instant time,
    @JsonProperty("run_id") String runId,
    @JsonProperty("client") String client,
    @JsonProperty("method") String method,
    @JsonProperty("host") String host,
    @JsonProperty("port") int port,
    @JsonIgnore boolean allowed,
    @JsonProperty("reason") Reason reason,
    @JsonProperty("address") String address,
    @JsonProperty("bytes_up") long bytesUp,
    @JsonProperty("bytes_down") long bytesDown,
    @JsonProperty("duration_ms") long durationMs,
    @JsonProperty("first") boolean first,
    @JsonProperty("end") String end,
    @JsonProperty("detail") String detail,
    @JsonProperty("path") @JsonInclude(JsonInclude.Include.NON_NULL) String path,
    @JsonProperty("status") @JsonInclude(JsonInclude.Include.NON_NULL) Integer status,
    @JsonProperty("credential") @JsonInclude(JsonInclude.Include.NON_NULL) String credential) {
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

  /** {@code "allow"} or {@code "deny"}, as written in JSON. */
  @JsonProperty("decision")
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
}
