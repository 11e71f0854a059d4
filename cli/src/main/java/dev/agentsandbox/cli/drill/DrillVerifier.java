package dev.agentsandbox.cli.drill;

import com.fasterxml.jackson.databind.JsonNode;
import dev.agentsandbox.cli.AdminApi;
import dev.agentsandbox.cli.drill.DrillObservation.AuditRef;
import dev.agentsandbox.cli.drill.DrillTranscript.StepResult;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Checks a drill transcript against the control plane's audit log: every cited row is there with
 * the same type, run, data and hash; the chain verifies and holds the transcript's head; and every
 * verdict follows from what the transcript recorded (so a verdict edited to "held" over a failing
 * observation is caught). What it cannot check: output the log never held — the transcript keeps
 * the output tail as the API answered it.
 */
final class DrillVerifier {
  private DrillVerifier() {}

  static List<AuditRef> citedRows(DrillTranscript transcript) {
    List<AuditRef> rows = new ArrayList<>();
    transcript.steps().forEach(s -> rows.addAll(s.observation().cited()));
    return rows;
  }

  /** Every difference between the transcript and the log, empty when it matches. */
  static List<String> problems(DrillTranscript transcript, AdminApi client)
      throws IOException, InterruptedException {
    List<String> problems = new ArrayList<>();
    for (AuditRef cited : citedRows(transcript)) {
      JsonNode row = row(client, cited.id());
      if (row == null) {
        problems.add("audit row " + cited.id() + " (" + cited.type() + "): not in the log");
        continue;
      }
      AuditRef logged = AuditRef.of(row);
      if (!logged.hash().equals(cited.hash())) {
        problems.add(
            "audit row "
                + cited.id()
                + ": hash differs (transcript "
                + abbreviated(cited.hash())
                + ", log "
                + abbreviated(logged.hash())
                + ")");
      }
      if (!logged.type().equals(cited.type())
          || !Objects.equals(logged.runId(), cited.runId())
          || !logged.data().equals(cited.data())) {
        problems.add("audit row " + cited.id() + ": type, run or data differ from the log");
      }
    }
    problems.addAll(chainProblems(transcript, client));
    problems.addAll(judgementProblems(transcript));
    return problems;
  }

  private static List<String> chainProblems(DrillTranscript transcript, AdminApi client)
      throws IOException, InterruptedException {
    List<String> problems = new ArrayList<>();
    JsonNode verified = client.get("verify the audit chain", AdminApi.AUDIT + "/verify");
    if (!verified.path("ok").asBoolean(false)) {
      problems.add(
          "the control plane does not verify its audit chain: " + verified.path("problems"));
    }
    long headId = transcript.auditChain().headId();
    JsonNode head = row(client, headId);
    if (head == null) {
      problems.add("the transcript's chain head " + headId + " is not in the log");
    } else if (!head.path("hash").asText().equals(transcript.auditChain().headHash())) {
      problems.add(
          "the transcript's chain head "
              + headId
              + " has another hash in the log (transcript "
              + abbreviated(transcript.auditChain().headHash())
              + ", log "
              + abbreviated(head.path("hash").asText())
              + ")");
    }
    for (AuditRef cited : citedRows(transcript)) {
      if (cited.id() > headId) {
        problems.add("audit row " + cited.id() + " is newer than the transcript's head " + headId);
      }
    }
    return problems;
  }

  /** The verdicts the transcript records must be the ones its observations give. */
  static List<String> judgementProblems(DrillTranscript transcript) {
    List<String> problems = new ArrayList<>();
    for (StepResult recorded : transcript.steps()) {
      DrillStep step;
      try {
        step = DrillSteps.byName(transcript.setup(), recorded.name());
      } catch (IllegalArgumentException e) {
        problems.add("step " + recorded.name() + ": no such drill step");
        continue;
      }
      StepResult again = StepResult.of(step, recorded.observation());
      if (!again.verdict().equals(recorded.verdict())
          || !again.checks().equals(recorded.checks())) {
        problems.add(
            "step "
                + recorded.name()
                + ": the transcript says "
                + recorded.verdict()
                + ", its observations say "
                + again.verdict()
                + " (or its checks were edited)");
      }
    }
    List<String> names = transcript.steps().stream().map(StepResult::name).toList();
    List<String> expected =
        DrillSteps.all(transcript.setup()).stream().map(DrillStep::name).toList();
    if (!names.equals(expected)) {
      problems.add("the transcript's steps " + names + " are not the drill's " + expected);
    }
    DrillTranscript.Leftovers leftovers =
        DrillEnd.leftoversOf(transcript.leftovers().runs(), listedLive(transcript));
    if (!leftovers.verdict().equals(transcript.leftovers().verdict())) {
      problems.add("nothing-left-behind: the verdict does not follow from the runs' statuses");
    }
    boolean chainHeld =
        transcript.auditChain().verified() && transcript.auditChain().problems().isEmpty();
    if (chainHeld != transcript.auditChain().verdict().equals(DrillTranscript.HELD)) {
      problems.add("audit chain: the verdict does not follow from the verification recorded");
    }
    String verdict =
        DrillTranscript.verdictOf(
            transcript.steps(), transcript.leftovers(), transcript.auditChain());
    if (!verdict.equals(transcript.verdict())) {
      problems.add(
          "the transcript's verdict "
              + transcript.verdict()
              + " does not follow from its steps ("
              + verdict
              + ")");
    }
    return problems;
  }

  /** The runs the transcript's second clean-up check found listed live. */
  private static List<String> listedLive(DrillTranscript transcript) {
    List<DrillCheck> checks = transcript.leftovers().checks();
    if (checks.size() < 2 || checks.get(1).held()) {
      return List.of();
    }
    return List.of(checks.get(1).seen());
  }

  /** One row of the log by id, or null. */
  private static JsonNode row(AdminApi client, long id) throws IOException, InterruptedException {
    JsonNode answer =
        client.get(
            "read audit row " + id,
            AdminApi.path(AdminApi.AUDIT, Map.of("after_id", Long.toString(id - 1), "limit", "1")));
    JsonNode rows = answer.path("rows");
    if (rows.isEmpty() || rows.get(0).path("id").asLong() != id) {
      return null;
    }
    return rows.get(0);
  }

  private static String abbreviated(String hash) {
    return hash.length() <= 16 ? hash : hash.substring(0, 16) + "...";
  }
}
