package dev.agentsandbox.runs;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.agentsandbox.policy.event.DecisionRecord;
import dev.agentsandbox.policy.event.EgressDenialsCounted;
import dev.agentsandbox.policy.event.EgressRecorded;
import dev.agentsandbox.policy.event.InvalidEventException;
import dev.agentsandbox.policy.event.TornDown;
import dev.agentsandbox.policy.net.Reason;
import dev.agentsandbox.runs.audit.RunTrail;
import java.io.IOException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Turns a run's proxy decisions into audit rows, within bounds a workload cannot push
 * (docs/runs.md, "Egress rows"), and keeps them for the run's result. A refusal is written in full
 * as {@code agent_sandbox.egress.deny} while its host has had fewer than {@link
 * Limits#deniesPerHost} and the run fewer than {@link Limits#deniesPerRun}; past either, it is
 * counted, and the count is written as one {@code agent_sandbox.egress.deny.counted} row per {@link
 * Limits#countInterval} (and at the run's end, {@link #finish()}). The first allowed connection to
 * each host is written as {@code agent_sandbox.egress.allow}, for at most {@link
 * Limits#allowedHostsPerRun} hosts. The exact totals go into the run's teardown row ({@link
 * #totals()}).
 *
 * <p>Thread-safe. Each row is appended (and committed) before the next decision is read; what a
 * crash can lose is the count not yet written (at most one interval's), never a row in full.
 */
final class EgressRecorder {
  private static final Logger LOG = LoggerFactory.getLogger(EgressRecorder.class);

  /**
   * How many egress rows one run may write.
   *
   * @param deniesPerHost refusals per host written in full
   * @param deniesPerRun refusals per run written in full, all hosts together
   * @param allowedHostsPerRun hosts whose first allowed connection is written
   * @param countInterval how long refusals past those are counted into one row
   */
  record Limits(
      int deniesPerHost, int deniesPerRun, int allowedHostsPerRun, Duration countInterval) {
    /** The limits every run has (docs/runs.md, "Egress rows"). */
    static final Limits DEFAULT = new Limits(10, 500, 500, Duration.ofMinutes(1));

    Limits {
      if (deniesPerHost < 1 || deniesPerRun < deniesPerHost || allowedHostsPerRun < 1) {
        throw new IllegalArgumentException("egress row limits must be at least 1");
      }
      if (countInterval.isNegative() || countInterval.isZero()) {
        throw new IllegalArgumentException("the count interval must be positive");
      }
    }
  }

  private final String runId;
  private final String agent;
  private final String actor;
  private final RunTrail trail;
  private final ObjectMapper json;
  private final int keep;
  private final Limits limits;
  private final Clock clock;
  private final List<DecisionRecord> decisions = new ArrayList<>();
  private final Set<String> allowedHosts = new HashSet<>();
  private final Map<String, Integer> deniedInFullByHost = new HashMap<>();
  private long dropped;
  private long malformed;
  private long denied;
  private long deniedInFull;
  private long deniedCounted;
  private long allowedHostsNotRecorded;
  private Tally tally;

  EgressRecorder(
      String runId,
      String agent,
      String actor,
      RunTrail trail,
      ObjectMapper json,
      int keep,
      Limits limits,
      Clock clock) {
    this.runId = runId;
    this.agent = agent;
    this.actor = actor;
    this.trail = trail;
    this.json = json;
    this.keep = keep;
    this.limits = limits;
    this.clock = clock;
  }

  /** One line of the proxy's decisions: its {@link DecisionRecord} wire form. */
  synchronized void accept(String line) {
    accept(line, decision -> List.of());
  }

  /**
   * One line of the proxy's decisions; {@code steps} names the session's steps it is attributed to
   * (asked once the line read as a decision), which its row carries when there are any.
   */
  synchronized void accept(
      String line, java.util.function.Function<DecisionRecord, List<Integer>> steps) {
    DecisionRecord decision;
    try {
      decision = DecisionRecord.read(json.readValue(line, Object.class));
    } catch (IOException | InvalidEventException e) {
      malformed++;
      LOG.warn("run {}: ignoring a proxy output line that is not a decision", runId);
      return;
    }
    if (decisions.size() < keep) {
      decisions.add(decision);
    } else {
      dropped++;
    }
    List<Integer> attributed = steps.apply(decision);
    if (decision.allowed()) {
      allowed(decision, attributed);
    } else {
      denied(decision, attributed);
    }
  }

  private void allowed(DecisionRecord decision, List<Integer> steps) {
    if (allowedHosts.contains(decision.host())) {
      return;
    }
    if (allowedHosts.size() < limits.allowedHostsPerRun()) {
      allowedHosts.add(decision.host());
      trail.append(actor, agent, runId, EgressRecorded.of(decision, steps));
    } else if (decision.first()) {
      allowedHostsNotRecorded++;
    }
  }

  private void denied(DecisionRecord decision, List<Integer> steps) {
    denied++;
    int forHost = deniedInFullByHost.getOrDefault(decision.host(), 0);
    if (forHost < limits.deniesPerHost() && deniedInFull < limits.deniesPerRun()) {
      deniedInFullByHost.put(decision.host(), forHost + 1);
      deniedInFull++;
      trail.append(actor, agent, runId, EgressRecorded.of(decision, steps));
      return;
    }
    Instant now = clock.instant();
    if (tally == null) {
      tally = new Tally(now);
    }
    tally.add(decision);
    deniedCounted++;
    if (!now.isBefore(tally.started.plus(limits.countInterval()))) {
      flush();
    }
  }

  /** Writes what is counted and not yet written; called once the run's proxy is gone. */
  synchronized void finish() {
    flush();
  }

  private void flush() {
    if (tally != null) {
      Tally written = tally;
      tally = null;
      trail.append(actor, agent, runId, written.event());
    }
  }

  /** The exact totals, for the teardown row. */
  synchronized TornDown.EgressTotals totals() {
    return new TornDown.EgressTotals(denied, deniedCounted, allowedHostsNotRecorded);
  }

  /** The decisions kept for the result, oldest first. */
  synchronized List<DecisionRecord> decisions() {
    return List.copyOf(decisions);
  }

  /** Decisions not kept because the result already held {@code keep} of them. */
  synchronized long dropped() {
    return dropped;
  }

  /** Proxy output lines that were not decisions. */
  synchronized long malformed() {
    return malformed;
  }

  /** Refusals counted over one interval, for one {@code egress.deny.counted} row. */
  private static final class Tally {
    private final Instant started;
    private final Map<Reason, Long> reasons = new EnumMap<>(Reason.class);
    private final Map<String, Long> hosts = new LinkedHashMap<>();
    private long otherHosts;
    private long count;
    private Instant firstAt;
    private Instant lastAt;

    Tally(Instant started) {
      this.started = started;
    }

    void add(DecisionRecord decision) {
      count++;
      reasons.merge(decision.reason(), 1L, Long::sum);
      if (hosts.containsKey(decision.host()) || hosts.size() < EgressDenialsCounted.MAX_HOSTS) {
        hosts.merge(decision.host(), 1L, Long::sum);
      } else {
        otherHosts++;
      }
      firstAt = firstAt == null || decision.time().isBefore(firstAt) ? decision.time() : firstAt;
      lastAt = lastAt == null || decision.time().isAfter(lastAt) ? decision.time() : lastAt;
    }

    EgressDenialsCounted event() {
      return new EgressDenialsCounted(count, firstAt, lastAt, reasons, hosts, otherHosts);
    }
  }
}
