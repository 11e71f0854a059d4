package dev.agentsandbox.cli.drill;

import com.fasterxml.jackson.databind.JsonNode;
import dev.agentsandbox.cli.AdminApi;
import dev.agentsandbox.cli.drill.DrillTranscript.Chain;
import dev.agentsandbox.cli.drill.DrillTranscript.Leftovers;
import dev.agentsandbox.cli.drill.DrillTranscript.StepResult;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The drill's two closing checks, after every step: nothing-left-behind (each run read back, none
 * live, none listed live) and audit-chain (the control plane verifies its whole chain, whose head
 * must cover every row cited).
 */
final class DrillEnd {
  private DrillEnd() {}

  /** Every run the drill started must have ended, and none may be listed as live. */
  static Leftovers leftovers(AdminApi client, Map<String, DrillObservation> seen)
      throws IOException, InterruptedException {
    Map<String, String> runs = new LinkedHashMap<>();
    List<DrillObservation> all = new ArrayList<>();
    for (DrillObservation observation : seen.values()) {
      all.add(observation);
      if (observation.peer() != null) {
        all.add(observation.peer());
      }
    }
    for (DrillObservation observation : all) {
      if (observation.runId() != null) {
        String status =
            client
                .get("read run " + observation.runId(), AdminApi.RUNS + "/" + observation.runId())
                .path("status")
                .asText();
        runs.put(observation.runId(), status);
      }
    }
    List<String> listedLive = new ArrayList<>();
    for (String status : List.of("pending", "running")) {
      JsonNode live =
          client.get(
              "list " + status + " runs",
              AdminApi.path(AdminApi.RUNS, Map.of("status", status, "limit", "500")));
      live.path("runs")
          .forEach(
              r -> {
                if (runs.containsKey(r.path("run_id").asText())) {
                  listedLive.add(r.path("run_id").asText());
                }
              });
    }
    return leftoversOf(runs, listedLive);
  }

  static Leftovers leftoversOf(Map<String, String> runs, List<String> listedLive) {
    List<String> live =
        runs.entrySet().stream()
            .filter(e -> e.getValue().equals("pending") || e.getValue().equals("running"))
            .map(Map.Entry::getKey)
            .toList();
    List<DrillCheck> checks =
        List.of(
            DrillCheck.of(
                "cleanup",
                "every run the drill started has ended",
                !runs.isEmpty() && live.isEmpty(),
                live.isEmpty() ? runs.size() + " runs, all ended" : "still live: " + live),
            DrillCheck.of(
                "cleanup",
                "the control plane lists none of them as pending or running",
                listedLive.isEmpty(),
                listedLive.isEmpty() ? "none listed" : "listed live: " + listedLive));
    return new Leftovers(
        DrillStep.held(checks) ? DrillTranscript.HELD : DrillTranscript.FAILED, checks, runs);
  }

  /** The control plane's verification of the whole chain, whose head must cover every row cited. */
  static Chain chain(AdminApi client, List<StepResult> results)
      throws IOException, InterruptedException {
    JsonNode verified = client.get("verify the audit chain", AdminApi.AUDIT + "/verify");
    String head = verified.path("head").asText();
    int colon = head.indexOf(':');
    long headId = colon > 0 ? Long.parseLong(head.substring(0, colon)) : 0;
    String headHash = colon > 0 ? head.substring(colon + 1) : "";
    List<String> problems = new ArrayList<>();
    verified.path("problems").forEach(p -> problems.add(p.asText()));
    long newestCited =
        results.stream()
            .flatMap(r -> r.auditRowIds().stream())
            .mapToLong(Long::longValue)
            .max()
            .orElse(0);
    boolean ok = verified.path("ok").asBoolean(false);
    boolean covers = headId >= newestCited;
    if (!covers) {
      problems.add("the head " + headId + " is older than cited row " + newestCited);
    }
    return new Chain(
        ok && covers ? DrillTranscript.HELD : DrillTranscript.FAILED,
        ok,
        verified.path("rows_checked").asLong(),
        problems,
        headId,
        headHash);
  }
}
