package dev.agentsandbox.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code config propose}: the allow-list entries an agent's recorded refusals call for, as a diff
 * of the sandbox configuration with each entry's evidence and the refusals no entry fixes; with
 * {@code --apply}, saved as a governed change (a loosening: it needs {@code governance.weaken} and
 * a reason, and the server answers its impact).
 */
@Command(
    name = "propose",
    mixinStandardHelpOptions = true,
    description = {
      "Propose allow-list entries for an agent from what its runs were refused.",
      "",
      "Reads the agent's refusals in the audit log (the last 7 days unless --since says) and"
          + " prints the entries that would have let them through as a diff of the sandbox"
          + " configuration, each with its evidence (refusals, runs, first and last seen, example"
          + " runs), then the refusals no entry fixes and why. --apply saves it as the next version:"
          + " a loosening, so it needs the governance.weaken scope and --reason."
    },
    footerHeading = "%nExamples:%n",
    footer = {
      "  agent-sandbox config propose --agent planner",
      "  agent-sandbox config propose --agent planner --since 30d --apply --reason CHG-2107"
    })
final class ConfigProposeCommand implements Callable<Integer> {
  @Spec CommandSpec spec;
  @Mixin ApiConnection api;

  @Option(names = "--agent", required = true, paramLabel = "AGENT", description = "The agent")
  String agent;

  @Option(
      names = "--since",
      paramLabel = "AGE",
      description =
          "How far back to read: an age (7d, the default; 12h) or an instant, at most 90d")
  String since;

  @Option(names = "--apply", description = "Save the proposal as the next version")
  boolean apply;

  @Option(
      names = "--reason",
      paramLabel = "TEXT",
      description = "Why (recorded in the audit log; required with --apply)")
  String reason;

  @Option(
      names = {"-o", "--output"},
      paramLabel = "FORMAT",
      description = "text (default) or json (the API's answer)")
  String format = "text";

  @Override
  public Integer call() throws IOException, InterruptedException {
    if (!format.equals("text") && !format.equals("json")) {
      throw new ParameterException(spec.commandLine(), "-o " + format + ": expected text or json");
    }
    if (apply && (reason == null || reason.isBlank())) {
      throw new ParameterException(
          spec.commandLine(), "--apply saves a loosening: give --reason (a change ticket)");
    }
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    Terminal terminal = Terminal.detect(api.env);
    try (AdminApi client = api.open(spec)) {
      Map<String, String> query = new java.util.HashMap<>();
      query.put("since", since);
      String path =
          AdminApi.path(
              AdminApi.BASE
                  + "/agents/"
                  + java.net.URLEncoder.encode(agent, java.nio.charset.StandardCharsets.UTF_8)
                  + "/egress-proposal",
              query);
      JsonNode proposal = client.get("propose entries for " + agent, path);
      if (format.equals("json")) {
        out.println(Printer.json(proposal));
        out.flush();
        if (!apply) {
          return 0;
        }
      }
      JsonNode current = client.get("read the sandbox configuration", AdminApi.BASE);
      if (current.path("version").asLong() != proposal.path("version").asLong()) {
        err.println(
            "agent-sandbox config propose: the configuration changed while the proposal was made"
                + " (version "
                + current.path("version").asLong()
                + " now, the proposal extends "
                + proposal.path("version").asLong()
                + "); run it again");
        err.flush();
        return Main.FAILED;
      }
      ObjectNode after = GovernedDocument.editable(current);
      ((ObjectNode) after.path("agents").path(agent)).set("allow", proposal.path("allow_after"));
      if (format.equals("text")) {
        describe(out, terminal, proposal, current, after);
      }
      if (!apply) {
        return 0;
      }
      if (proposal.path("entries").isEmpty()) {
        out.println("Nothing to save.");
        out.flush();
        return 0;
      }
      after.put("version", proposal.path("version").asLong());
      after.put("reason", reason.strip());
      AdminApi.Answer answer =
          client.exchange(
              client
                  .request(AdminApi.BASE, Duration.ofSeconds(60))
                  .header("Content-Type", "application/json")
                  .PUT(AdminApi.json(after))
                  .build());
      if (answer.status() / 100 != 2) {
        ApiCallException refused = ApiCallException.of("save the proposal for " + agent, answer);
        err.println("agent-sandbox config propose: " + refused.getMessage());
        if (refused.code().equals("version_conflict")) {
          err.println("(someone saved since the proposal was made: run config propose again)");
        }
        err.flush();
        return Main.FAILED;
      }
      JsonNode saved = answer.json();
      ImpactPrinter.print(out, terminal, saved.path("change").path("impact"));
      out.println(
          terminal.green("saved")
              + " the sandbox configuration as version "
              + saved.path("version").asLong()
              + " (a weakening: "
              + saved.path("change").path("loosenings").size()
              + " entr"
              + (saved.path("change").path("loosenings").size() == 1 ? "y" : "ies")
              + " added, reason recorded in the audit log)");
      out.flush();
      return 0;
    }
  }

  private void describe(
      PrintWriter out, Terminal terminal, JsonNode proposal, JsonNode current, JsonNode after)
      throws IOException {
    out.println(
        "Proposal for "
            + agent
            + " from "
            + proposal.path("refusals_read").asLong()
            + " refusal(s) since "
            + proposal.path("since").asText()
            + " (sandbox configuration version "
            + proposal.path("version").asLong()
            + ")");
    JsonNode entries = proposal.path("entries");
    if (entries.isEmpty()) {
      out.println("Nothing to add: no refusal in that time is one an allow-list entry fixes.");
    } else {
      DocumentDiff.print(
          out,
          terminal,
          "agent-sandbox (version " + current.path("version").asLong() + ")",
          "agent-sandbox (proposed)",
          current,
          after);
      out.println("Evidence:");
      for (JsonNode entry : entries) {
        out.println(
            "  "
                + terminal.green("+ " + entry.path("entry").asText())
                + "  "
                + entry.path("refusals").asLong()
                + " refusal(s) in "
                + entry.path("runs").asInt()
                + " run(s), "
                + entry.path("first_seen").asText()
                + " to "
                + entry.path("last_seen").asText()
                + ", e.g. "
                + String.join(" ", texts(entry.path("example_runs"))));
        if (entry.path("hosts").size() > 1 || entry.path("hosts_left_out").asInt() > 0) {
          out.println(
              "      covers "
                  + String.join(", ", texts(entry.path("hosts")))
                  + (entry.path("hosts_left_out").asInt() > 0
                      ? " and " + entry.path("hosts_left_out").asInt() + " more"
                      : ""));
        }
        if (entry.path("blocked_by_instance_policy").asBoolean()) {
          out.println(
              "      "
                  + terminal.yellow(
                      "the instance egress policy would still refuse "
                          + String.join(", ", texts(entry.path("instance_policy_blocks")))));
        }
      }
      if (proposal.path("entries_left_out").asInt() > 0) {
        out.println("  (" + proposal.path("entries_left_out").asInt() + " more entries left out)");
      }
    }
    JsonNode stays = proposal.path("not_fixable");
    if (!stays.isEmpty()) {
      out.println("Stays refused (no entry fixes these):");
      for (JsonNode group : stays) {
        out.println(
            "  "
                + terminal.red(group.path("host").asText() + ":" + group.path("port").asInt())
                + "  "
                + group.path("reason").asText()
                + ", "
                + group.path("refusals").asLong()
                + " refusal(s) in "
                + group.path("runs").asInt()
                + " run(s): "
                + group.path("detail").asText());
      }
    }
    if (!proposal.path("now_allowed").isEmpty()) {
      out.println(
          "Allowed since: "
              + proposal.path("now_allowed").size()
              + " refused host(s) the current configuration already allows.");
    }
    out.flush();
  }

  private static List<String> texts(JsonNode array) {
    List<String> texts = new ArrayList<>();
    array.forEach(n -> texts.add(n.asText()));
    return texts;
  }
}
