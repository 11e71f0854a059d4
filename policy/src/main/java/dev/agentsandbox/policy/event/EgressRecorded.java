package dev.agentsandbox.policy.event;

import dev.agentsandbox.policy.net.Reason;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * {@code agent_sandbox.egress.deny} (a refused attempt, in full) or {@code
 * agent_sandbox.egress.allow} (the first allowed connection to a host): one proxy decision as the
 * audit log keeps it — the decision less its run id, byte counts, duration, end and detail.
 *
 * @param allowed whether the attempt was allowed
 * @param time when the attempt started (the proxy's clock)
 * @param client the client's address and port
 * @param method the HTTP method, or {@code -}
 * @param host the target host as the proxy read it
 * @param port the target port
 * @param reason why
 * @param address the checked address, when one was resolved
 * @param first whether the proxy marked it the first allow of its host
 * @param path on an inspected host, the request's normalised path (query dropped)
 * @param status on an inspected host, the status the upstream answered an allowed request with
 * @param credential on an inspected host, the name (never the value) of the credential the proxy
 *     set on the request
 * @param steps a session's steps the decision was attributed to (those running when the proxy made
 *     it); empty for a one-shot run
 */
public record EgressRecorded(
    boolean allowed,
    Instant time,
    String client,
    String method,
    String host,
    int port,
    Reason reason,
    Optional<String> address,
    boolean first,
    Optional<String> path,
    Optional<Integer> status,
    Optional<String> credential,
    List<Integer> steps)
    implements RunEvent {

  /** A decision of an opaque tunnel or a plain HTTP request: no path, status or credential. */
  public EgressRecorded(
      boolean allowed,
      Instant time,
      String client,
      String method,
      String host,
      int port,
      Reason reason,
      Optional<String> address,
      boolean first) {
    this(
        allowed,
        time,
        client,
        method,
        host,
        port,
        reason,
        address,
        first,
        Optional.empty(),
        Optional.empty(),
        Optional.empty(),
        List.of());
  }

  /** A session's decision of an opaque tunnel or a plain HTTP request, with its steps. */
  public EgressRecorded(
      boolean allowed,
      Instant time,
      String client,
      String method,
      String host,
      int port,
      Reason reason,
      Optional<String> address,
      boolean first,
      List<Integer> steps) {
    this(
        allowed,
        time,
        client,
        method,
        host,
        port,
        reason,
        address,
        first,
        Optional.empty(),
        Optional.empty(),
        Optional.empty(),
        steps);
  }

  public EgressRecorded {
    Objects.requireNonNull(time, "time");
    Objects.requireNonNull(client, "client");
    Objects.requireNonNull(method, "method");
    Objects.requireNonNull(host, "host");
    Objects.requireNonNull(address, "address");
    Objects.requireNonNull(path, "path");
    Objects.requireNonNull(status, "status");
    Objects.requireNonNull(credential, "credential");
    steps = List.copyOf(steps);
    if (reason == null || allowed != (reason == Reason.ALLOWED)) {
      throw new IllegalArgumentException("an allowed decision has reason allowed, a refusal not");
    }
  }

  /** The decision as the audit log keeps it. */
  public static EgressRecorded of(DecisionRecord d) {
    return of(d, List.of());
  }

  /** A session's decision as the audit log keeps it, with the steps it was attributed to. */
  public static EgressRecorded of(DecisionRecord d, List<Integer> steps) {
    return new EgressRecorded(
        d.allowed(),
        d.time(),
        d.client(),
        d.method(),
        d.host(),
        d.port(),
        d.reason(),
        Optional.ofNullable(d.address()),
        d.first(),
        Optional.ofNullable(d.path()),
        Optional.ofNullable(d.status()),
        Optional.ofNullable(d.credential()),
        steps);
  }

  /** {@code "allow"} or {@code "deny"}. */
  public String decision() {
    return allowed ? "allow" : "deny";
  }

  @Override
  public EventType type() {
    return allowed ? EventType.EGRESS_ALLOW : EventType.EGRESS_DENY;
  }

  /**
   * The row's data; {@code address} is always there, {@code null} when none was resolved; {@code
   * path}, {@code status} and {@code credential} only where the proxy reported them (an inspected
   * host), so a row of an opaque tunnel reads as it always did.
   */
  @Override
  public Map<String, Object> toTree() {
    return Fields.tree()
        .put("time", time.toString())
        .put("client", client)
        .put("method", method)
        .put("host", host)
        .put("port", port)
        .put("reason", reason.wireName())
        .put("address", address.orElse(null))
        .put("first", first)
        .putIfPresent("path", path)
        .putIfPresent("status", status)
        .putIfPresent("credential", credential)
        .putIf(!steps.isEmpty(), "steps", steps)
        .build();
  }

  /**
   * The decision as a run's view lists it ({@code GET .../runs/{id}}'s {@code egress}): {@link
   * #toTree()} with its {@code decision} first.
   */
  public Map<String, Object> listedTree() {
    Map<String, Object> tree = new java.util.LinkedHashMap<>();
    tree.put("decision", decision());
    tree.putAll(toTree());
    return java.util.Collections.unmodifiableMap(tree);
  }

  /**
   * Reads a decision as a run's view lists it: a whole {@link DecisionRecord} (a live run) or a
   * {@link #listedTree()} (a stored one); both carry {@code decision} and every field here.
   */
  public static EgressRecorded readListed(Object tree) {
    String decision = String.valueOf(Fields.peek(tree, "decision"));
    if (!decision.equals("allow") && !decision.equals("deny")) {
      throw new InvalidEventException(
          "a listed egress decision", java.util.List.of("decision is neither allow nor deny"));
    }
    return read(decision.equals("allow"), "a listed egress decision", tree);
  }

  static EgressRecorded read(boolean allowed, Object data) {
    return read(
        allowed,
        (allowed ? EventType.EGRESS_ALLOW : EventType.EGRESS_DENY).wireName() + " row",
        data);
  }

  private static EgressRecorded read(boolean allowed, String what, Object data) {
    Fields f = Fields.of(what, data);
    Instant time = f.instant("time");
    String client = f.string("client");
    String method = f.string("method");
    String host = f.string("host");
    int port = f.integer("port");
    Reason reason = f.named("reason", Reason::fromWireName, Reason.ALLOWED);
    Optional<String> address = f.optionalString("address");
    boolean first = f.bool("first");
    Optional<String> path = f.optionalString("path");
    Optional<Integer> status = f.optionalInteger("status");
    Optional<String> credential = f.optionalString("credential");
    List<Integer> steps = f.integersOrEmpty("steps");
    if (f.has("reason") && allowed != (reason == Reason.ALLOWED)) {
      f.problem("reason", "does not go with " + what);
    }
    f.done();
    return new EgressRecorded(
        allowed,
        time,
        client,
        method,
        host,
        port,
        reason,
        address,
        first,
        path,
        status,
        credential,
        steps);
  }
}
