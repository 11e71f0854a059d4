package dev.agentsandbox.cli.drill;

import dev.agentsandbox.cli.drill.DrillObservation.AuditRef;
import dev.agentsandbox.cli.drill.DrillTranscript.StepResult;
import java.util.List;
import java.util.Map;

/** {@code drill.md}: the transcript for people, rendered from the same record as the JSON. */
final class DrillMarkdown {
  /** How much of each step's output the Markdown shows (the JSON keeps more). */
  static final int SHOWN_OUTPUT = 2000;

  private DrillMarkdown() {}

  static String render(DrillTranscript t) {
    StringBuilder md = new StringBuilder();
    md.append("# Hostile-task drill ").append(t.drillId()).append("\n\n");
    md.append("**Verdict: ")
        .append(t.verdict().equals(DrillTranscript.HELD) ? "every layer held" : "A LAYER FAILED")
        .append("**\n\n");
    md.append("| | |\n| --- | --- |\n");
    row(md, "Started", t.startedAt());
    row(md, "Ended", t.endedAt());
    row(md, "From host", t.host().name());
    row(md, "Control plane", t.host().server());
    row(md, "CLI version", t.versions().cli());
    row(md, "API version", t.versions().api());
    row(
        md,
        "Backend",
        t.versions().backend()
            + ", runtime "
            + t.versions().runtime()
            + ", isolation "
            + t.versions().isolation());
    row(md, "Backend probe", t.versions().probe());
    row(md, "Configuration version", Long.toString(t.configuration().version()));
    row(
        md,
        "Agent",
        t.setup().agent()
            + " (effective allow-list "
            + (t.configuration().effectiveAllow().isEmpty()
                ? "empty"
                : String.join(", ", t.configuration().effectiveAllow()))
            + ", ttl "
            + t.configuration().ttlSeconds()
            + " s, "
            + t.configuration().resources()
            + ")");
    row(
        md,
        "Audit chain",
        (t.auditChain().verified() ? "verified, " : "NOT verified, ")
            + t.auditChain().rowsChecked()
            + " rows; head "
            + t.auditChain().headId()
            + ":"
            + t.auditChain().headHash());
    md.append(
        "\nCheck this file against the audit log: `agent-sandbox drill verify drill.json`.\n");

    md.append("\n## Steps\n\n| Step | Verdict | Run | Layers |\n| --- | --- | --- | --- |\n");
    for (StepResult step : t.steps()) {
      md.append("| ")
          .append(step.name())
          .append(" | ")
          .append(step.verdict())
          .append(" | ")
          .append(step.observation().runId() == null ? "-" : step.observation().runId())
          .append(" | ")
          .append(
              String.join(
                  ", ",
                  step.checks().stream()
                      .map(c -> c.layer() + (c.held() ? " held" : " FAILED"))
                      .toList()))
          .append(" |\n");
    }
    md.append("| nothing-left-behind | ").append(t.leftovers().verdict()).append(" | - | ");
    md.append(
            String.join(
                ", ",
                t.leftovers().checks().stream()
                    .map(c -> c.layer() + (c.held() ? " held" : " FAILED"))
                    .toList()))
        .append(" |\n");

    for (StepResult step : t.steps()) {
      md.append("\n### ").append(step.name()).append(": ").append(step.verdict()).append("\n\n");
      md.append(step.attack()).append(".\n\n");
      md.append("Command");
      if (!step.envKeys().isEmpty()) {
        md.append(" (environment ").append(String.join(", ", step.envKeys())).append(")");
      }
      md.append(":\n\n");
      fence(md, commandText(step.command()));
      DrillObservation seen = step.observation();
      if (seen.runId() != null) {
        md.append("Run `")
            .append(seen.runId())
            .append("`: status ")
            .append(seen.status())
            .append(", end ")
            .append(seen.end())
            .append(", exit status ")
            .append(seen.exitStatus())
            .append(".\n\nOutput (redacted by the control plane):\n\n");
        fence(md, shown(seen.output()));
      }
      if (seen.refusal() != null) {
        md.append("API answer: ")
            .append(seen.refusal().httpStatus())
            .append(" `")
            .append(seen.refusal().error())
            .append("`.\n\n");
      }
      DrillObservation target = seen.peer();
      if (target != null) {
        md.append("The other live sandbox, run `")
            .append(target.runId())
            .append("` (status ")
            .append(target.status())
            .append("), ran:\n\n");
        fence(md, commandText(step.peerCommand() == null ? List.of() : step.peerCommand()));
        md.append("Its output (redacted by the control plane):\n\n");
        fence(md, shown(target.output()));
      }
      checks(md, step.checks());
      if (!seen.cited().isEmpty()) {
        md.append("\nAudit rows relied on:\n\n| Id | Type | Hash |\n| --- | --- | --- |\n");
        for (AuditRef ref : seen.cited()) {
          md.append("| ")
              .append(ref.id())
              .append(" | ")
              .append(ref.type())
              .append(" | `")
              .append(ref.hash())
              .append("` |\n");
        }
      }
    }
    md.append("\n## Nothing left behind: ").append(t.leftovers().verdict()).append("\n\n");
    checks(md, t.leftovers().checks());
    md.append("\n| Run | Status at the end |\n| --- | --- |\n");
    for (Map.Entry<String, String> run : t.leftovers().runs().entrySet()) {
      md.append("| ").append(run.getKey()).append(" | ").append(run.getValue()).append(" |\n");
    }
    md.append("\n## Audit chain: ").append(t.auditChain().verdict()).append("\n\n");
    md.append("Verified by the control plane at the end: ")
        .append(t.auditChain().verified())
        .append(", ")
        .append(t.auditChain().rowsChecked())
        .append(" rows checked, head `")
        .append(t.auditChain().headId())
        .append(":")
        .append(t.auditChain().headHash())
        .append("`.\n");
    for (String problem : t.auditChain().problems()) {
      md.append("- ").append(problem).append('\n');
    }
    return md.toString();
  }

  private static void checks(StringBuilder md, List<DrillCheck> checks) {
    md.append("| Layer | Expected | Seen | Held |\n| --- | --- | --- | --- |\n");
    for (DrillCheck check : checks) {
      md.append("| ")
          .append(check.layer())
          .append(" | ")
          .append(cell(check.expected()))
          .append(" | ")
          .append(cell(check.seen()))
          .append(" | ")
          .append(check.held() ? "yes" : "**NO**")
          .append(" |\n");
    }
  }

  private static String shown(String output) {
    return output.length() <= SHOWN_OUTPUT
        ? output
        : output.substring(0, SHOWN_OUTPUT) + "\n[... drill.json has more]";
  }

  private static String commandText(List<String> command) {
    if (command.size() >= 3 && command.get(0).equals("sh") && command.get(1).equals("-c")) {
      return "sh -c '\n"
          + command.get(2)
          + "'"
          + (command.size() > 3 ? " " + String.join(" ", command.subList(3, command.size())) : "");
    }
    return String.join(" ", command);
  }

  private static void fence(StringBuilder md, String text) {
    // A fence longer than any run of backticks in the text cannot be closed by it.
    String ticks = "```";
    while (text.contains(ticks)) {
      ticks += "`";
    }
    md.append(ticks).append('\n').append(text.stripTrailing()).append('\n').append(ticks);
    md.append("\n\n");
  }

  private static String cell(String text) {
    return text.replace("|", "\\|").replace("\n", " ");
  }

  private static void row(StringBuilder md, String name, String value) {
    md.append("| ").append(name).append(" | ").append(cell(String.valueOf(value))).append(" |\n");
  }
}
