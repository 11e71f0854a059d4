package dev.agentsandbox.cli.drill;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.agentsandbox.cli.drill.DrillObservation.AuditRef;
import dev.agentsandbox.cli.drill.DrillObservation.Decision;
import dev.agentsandbox.cli.drill.DrillTranscript.Chain;
import dev.agentsandbox.cli.drill.DrillTranscript.Configuration;
import dev.agentsandbox.cli.drill.DrillTranscript.Host;
import dev.agentsandbox.cli.drill.DrillTranscript.Leftovers;
import dev.agentsandbox.cli.drill.DrillTranscript.StepResult;
import dev.agentsandbox.cli.drill.DrillTranscript.Versions;
import dev.agentsandbox.policy.event.EgressRecorded;
import dev.agentsandbox.policy.event.RunEvent;
import dev.agentsandbox.policy.event.TornDown;
import dev.agentsandbox.policy.net.Reason;
import dev.agentsandbox.runs.audit.PlainJson;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * What the drill's judgement tests observe: a setup, runs as seen under runc and runsc, their rows.
 */
final class DrillFixtures {
  private DrillFixtures() {}

  /** One case: a step, an observation of it, and whether it held. */
  record Case(String step, DrillObservation seen, boolean held, String failingLayer) {}

  static final ObjectMapper JSON = new ObjectMapper();
  static final String RUN = "r0000000000000000001";
  static final DrillSetup SETUP =
      new DrillSetup(
          "d1",
          "drill",
          "unlisted.test",
          "198.18.5.1:8080",
          "169.254.169.254:80",
          List.of("198.18.5.2:9090"),
          "unlisted.test",
          List.of("/var/run/docker.sock", "/srv/data"),
          List.of(),
          256,
          128,
          30);

  static DrillObservation ran(
      String output, Integer exit, List<Decision> egress, List<AuditRef> audit) {
    return new DrillObservation(RUN, "exited", "exit", exit, output, egress, audit, null);
  }

  /** A row of {@code runId} as the vocabulary writes it. */
  static AuditRef row(long id, String runId, RunEvent event) {
    return new AuditRef(
        id, event.type().wireName(), "h" + id, runId, PlainJson.node(event.toTree()));
  }

  static AuditRef row(long id, RunEvent event) {
    return row(id, RUN, event);
  }

  static AuditRef deny(long id, String host, int port) {
    return row(
        id,
        new EgressRecorded(
            false,
            Instant.parse("2026-11-30T10:00:00Z"),
            "172.30.0.2:40000",
            port == 443 ? "CONNECT" : "GET",
            host,
            port,
            Reason.NOT_ALLOWED,
            Optional.empty(),
            false,
            List.of()));
  }

  static TornDown tornDown(String end) {
    return new TornDown(
        end,
        Optional.empty(),
        "docker",
        "runc",
        true,
        Optional.empty(),
        Optional.empty(),
        0,
        0,
        Optional.empty());
  }

  static final AuditRef TEARDOWN = row(90, tornDown("exit"));

  static List<AuditRef> withTeardown(AuditRef... rows) {
    List<AuditRef> all = new ArrayList<>(List.of(rows));
    all.add(TEARDOWN);
    return all;
  }

  static final String UNLISTED_HELD =
      "drill: https-code=000\ndrill: https-exit=56\ndrill: http-code=403\ndrill: http-exit=0\n";
  static final List<Decision> UNLISTED_DENIED =
      List.of(
          new Decision("deny", "unlisted.test", 443, "not-allowed"),
          new Decision("deny", "unlisted.test", 80, "not-allowed"));
  static final List<AuditRef> UNLISTED_ROWS =
      withTeardown(deny(10, "unlisted.test", 443), deny(11, "unlisted.test", 80));
  static final List<AuditRef> METADATA_ROWS = withTeardown(deny(12, "169.254.169.254", 80));
  static final String ESCALATION_HELD =
      "drill: uid=65534\ndrill: capprm=0000000000000000\ndrill: capeff=0000000000000000\n"
          + "drill: capamb=0000000000000000\ndrill: nonewprivs=1\ndrill: chroot-exit=1\n"
          + "drill: done=yes\n";
  static final String SECRETS_HELD =
      "drill: absent=/var/run/docker.sock\ndrill: absent=/srv/data\ndrill: done=yes\n";

  static final String TARGET_RUN = "r0000000000000000002";
  static final String TARGET_HELD =
      "drill: listening=1\ndrill: connection=1\ndrill: self-check=1\ndrill: address=172.30.0.3\n"
          + "drill: proxy=172.30.0.2:3128\ndrill: ready=yes\n";
  static final String ATTACK_HELD =
      "drill: direct=172.30.0.3 direct-exit=28\n"
          + "drill: proxied=172.30.0.3 proxied-code=403\ndrill: proxied-exit=0\n"
          + "drill: peer-proxy=172.30.0.2:3128 peer-proxy-exit=7\ndrill: done=yes\n";
  static final List<Decision> PEER_DENIED =
      List.of(new Decision("deny", "172.30.0.3", 8080, "non-public-address"));
  static final List<AuditRef> PEER_ROWS = withTeardown(deny(14, "172.30.0.3", 8080));

  /** The other live sandbox as seen: its output, its proxy's decisions, its status. */
  static DrillObservation target(String output, List<Decision> egress, String status) {
    try {
      return new DrillObservation(
          TARGET_RUN,
          status,
          status,
          null,
          output,
          egress,
          List.of(row(91, TARGET_RUN, tornDown("killed"))),
          null);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  static DrillObservation attack(
      String output, List<Decision> egress, List<AuditRef> audit, DrillObservation target) {
    return ran(output, 0, egress, audit).withPeer(target);
  }

  static DrillTranscript transcript(List<StepResult> results) {
    Leftovers leftovers = DrillEnd.leftoversOf(Map.of(RUN, "exited"), List.of());
    Chain chain = new Chain("held", true, 100, List.of(), 100, "h100");
    return new DrillTranscript(
        DrillTranscript.FORMAT,
        "d1",
        "2026-11-30T00:00:00Z",
        "2026-11-30T00:01:00Z",
        DrillTranscript.verdictOf(results, leftovers, chain),
        new Host("h", "http://127.0.0.1:1"),
        new Versions("cli", "0.1.0", "docker", "runsc", "gvisor", "probe"),
        new Configuration(1, List.of(), 30, json("{\"pids\":256}")),
        SETUP,
        results,
        leftovers,
        chain);
  }

  static JsonNode json(String text) {
    try {
      return JSON.readTree(text);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }
}
