package dev.agentsandbox.mcp;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * What the tools tell a model about where its sandboxes may connect: each agent the token may use
 * with its effective allow-list (its own list narrowed by the instance egress policy, exactly what
 * the proxy enforces), read with the caller's own token, so a token limited to agents sees only
 * theirs.
 *
 * @param allow each agent's effective allow-list, by agent name
 * @param unreadable why the configuration could not be read with the token, when it could not
 */
record AgentPolicies(SortedMap<String, List<String>> allow, Optional<String> unreadable) {
  AgentPolicies {
    SortedMap<String, List<String>> copy = new TreeMap<>();
    allow.forEach((agent, entries) -> copy.put(agent, List.copyOf(entries)));
    allow = Collections.unmodifiableSortedMap(copy);
  }

  /** Reads the configuration with the token; a refusal is kept as what the descriptions say. */
  static AgentPolicies read(SandboxApi api) {
    JsonNode config;
    try {
      config = api.configuration();
    } catch (SandboxApiException e) {
      return new AgentPolicies(
          new TreeMap<>(),
          Optional.of(
              "the allow-lists could not be read with this token ("
                  + e.code()
                  + ": "
                  + e.getMessage()
                  + ")"));
    }
    SortedMap<String, List<String>> allow = new TreeMap<>();
    for (Iterator<Map.Entry<String, JsonNode>> it = config.path("agents").fields();
        it.hasNext(); ) {
      Map.Entry<String, JsonNode> agent = it.next();
      List<String> entries = new ArrayList<>();
      agent.getValue().path("effective_allow").forEach(entry -> entries.add(entry.asText()));
      allow.put(agent.getKey(), entries);
    }
    return new AgentPolicies(allow, Optional.empty());
  }

  /**
   * The paragraph a tool's description ends with: each agent and the hosts it may reach, and what
   * happens to every other host.
   */
  String describe() {
    if (unreadable.isPresent()) {
      return "Egress: every connection from the sandbox goes through its proxy, which refuses any"
          + " host not on the agent's allow-list; "
          + unreadable.get()
          + ".";
    }
    if (allow.isEmpty()) {
      return "Egress: no agent is configured for this token, so nothing can run.";
    }
    StringBuilder text =
        new StringBuilder(
            "Egress: every connection from the sandbox goes through its proxy, which allows only"
                + " these hosts (ports 80 and 443 unless a port is named) and refuses every other"
                + " one; a refusal is reported in the result with the host and the reason, and a"
                + " host that is not listed is refused every time.");
    allow.forEach(
        (agent, entries) ->
            text.append(" Agent ")
                .append(agent)
                .append(" may reach: ")
                .append(entries.isEmpty() ? "nothing (no host at all)" : String.join(", ", entries))
                .append('.'));
    return text.toString();
  }
}
