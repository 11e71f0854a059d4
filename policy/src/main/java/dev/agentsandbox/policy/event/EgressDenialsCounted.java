package dev.agentsandbox.policy.event;

import dev.agentsandbox.policy.net.Reason;
import java.time.Instant;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * {@code agent_sandbox.egress.deny.counted}: refused attempts of one run past its limits for rows
 * in full (docs/runs.md, "Egress rows"), counted over one interval: how many, between which times,
 * by reason and by host. Each refusal is in exactly one {@code agent_sandbox.egress.deny} row or
 * one of these counts; the run's teardown row carries the exact totals.
 *
 * @param count the refusals counted
 * @param firstAt when the first of them was reported
 * @param lastAt when the last of them was reported
 * @param reasons how many of them had each reason
 * @param hosts how many went to each of the hosts named (at most {@link #MAX_HOSTS})
 * @param otherHosts how many went to hosts past those
 */
public record EgressDenialsCounted(
    long count,
    Instant firstAt,
    Instant lastAt,
    Map<Reason, Long> reasons,
    Map<String, Long> hosts,
    long otherHosts)
    implements RunEvent {
  /** The most hosts one row names; the rest are counted in {@code other_hosts}. */
  public static final int MAX_HOSTS = 50;

  public EgressDenialsCounted {
    Objects.requireNonNull(firstAt, "firstAt");
    Objects.requireNonNull(lastAt, "lastAt");
    reasons = java.util.Collections.unmodifiableMap(new java.util.EnumMap<>(copy(reasons)));
    hosts = java.util.Collections.unmodifiableMap(new TreeMap<>(hosts));
    if (count < 1 || otherHosts < 0 || hosts.size() > MAX_HOSTS) {
      throw new IllegalArgumentException(
          "a count row counts at least one refusal, 50 hosts at most");
    }
    long byReason = reasons.values().stream().mapToLong(Long::longValue).sum();
    long byHost = hosts.values().stream().mapToLong(Long::longValue).sum() + otherHosts;
    if (byReason != count || byHost != count) {
      throw new IllegalArgumentException(
          "the counts by reason (" + byReason + ") and by host (" + byHost + ") must be " + count);
    }
  }

  private static Map<Reason, Long> copy(Map<Reason, Long> reasons) {
    Map<Reason, Long> copy = new java.util.EnumMap<>(Reason.class);
    copy.putAll(reasons);
    return copy;
  }

  @Override
  public EventType type() {
    return EventType.EGRESS_DENY_COUNTED;
  }

  @Override
  public Map<String, Object> toTree() {
    Map<String, Object> byReason = new TreeMap<>();
    reasons.forEach((reason, n) -> byReason.put(reason.wireName(), n));
    return Fields.tree()
        .put("count", count)
        .put("first_at", firstAt.toString())
        .put("last_at", lastAt.toString())
        .put("reasons", byReason)
        .put("hosts", hosts)
        .put("other_hosts", otherHosts)
        .build();
  }

  static EgressDenialsCounted read(Object data) {
    Fields f = Fields.of(EventType.EGRESS_DENY_COUNTED, data);
    long count = f.whole("count");
    Instant first = f.instant("first_at");
    Instant last = f.instant("last_at");
    Map<Reason, Long> reasons = new java.util.EnumMap<>(Reason.class);
    f.counts("reasons")
        .forEach(
            (name, n) ->
                Reason.fromWireName(name)
                    .ifPresentOrElse(
                        r -> reasons.put(r, n),
                        () -> f.problem("reasons." + name, "is not a reason")));
    Map<String, Long> hosts = f.counts("hosts");
    long others = f.whole("other_hosts");
    f.done();
    try {
      return new EgressDenialsCounted(count, first, last, reasons, hosts, others);
    } catch (IllegalArgumentException e) {
      throw new InvalidEventException(
          EventType.EGRESS_DENY_COUNTED.wireName() + " row", java.util.List.of(e.getMessage()));
    }
  }
}
