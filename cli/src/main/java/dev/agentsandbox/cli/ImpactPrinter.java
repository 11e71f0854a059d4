package dev.agentsandbox.cli;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;

/**
 * A change's impact on recorded egress ({@code change.impact}, or a refusal's {@code impact}) as
 * lines a reviewer reads before saving: per agent, the refusals it would have allowed and the runs
 * it would have broken, with hosts and example runs.
 */
final class ImpactPrinter {
  /** How many hosts a line names before it says how many more. */
  private static final int HOSTS_SHOWN = 5;

  private ImpactPrinter() {}

  static void print(PrintWriter out, Terminal terminal, JsonNode impact) {
    if (impact == null || impact.isMissingNode() || impact.isNull()) {
      return;
    }
    String window = "since " + impact.path("since").asText();
    JsonNode agents = impact.path("agents");
    if (agents.isEmpty()) {
      out.println("Impact on recorded egress: this change alters no agent's allow-lists.");
      out.flush();
      return;
    }
    out.println("Impact on recorded egress " + window + ":");
    for (JsonNode agent : agents) {
      String name = agent.path("agent").asText();
      JsonNode opened = agent.path("would_allow");
      JsonNode closed = agent.path("would_refuse");
      if (opened.path("refusals").asLong() == 0 && closed.path("connections").asLong() == 0) {
        out.println("  " + name + ": nothing recorded would change");
        continue;
      }
      if (opened.path("refusals").asLong() > 0) {
        out.println(
            "  "
                + name
                + ": would have allowed "
                + opened.path("refusals").asLong()
                + " refusal(s) in "
                + opened.path("runs").asInt()
                + " run(s) at "
                + hosts(opened, "refusals"));
      }
      if (closed.path("connections").asLong() > 0) {
        out.println(
            "  "
                + terminal.yellow(
                    name
                        + ": would have broken "
                        + closed.path("runs").asInt()
                        + " run(s) of "
                        + name
                        + " at "
                        + hosts(closed, "connections")));
      }
    }
    out.flush();
  }

  private static String hosts(JsonNode side, String countName) {
    List<String> shown = new ArrayList<>();
    for (JsonNode host : side.path("top")) {
      if (shown.size() == HOSTS_SHOWN) {
        break;
      }
      List<String> runs = new ArrayList<>();
      host.path("example_runs").forEach(r -> runs.add(r.asText()));
      List<String> as = new ArrayList<>();
      host.path("refused_as").forEach(r -> as.add(r.asText()));
      shown.add(
          host.path("host").asText()
              + ":"
              + host.path("port").asInt()
              + " ("
              + host.path(countName).asLong()
              + " in "
              + host.path("runs").asInt()
              + " run(s), "
              + String.join("/", as)
              + (runs.isEmpty()
                  ? ""
                  : ", e.g. " + String.join(" ", runs.subList(0, Math.min(2, runs.size()))))
              + ")");
    }
    int more = side.path("hosts").asInt() - shown.size();
    return String.join(", ", shown) + (more > 0 ? " and " + more + " more host(s)" : "");
  }
}
