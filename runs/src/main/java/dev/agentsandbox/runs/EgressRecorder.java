package dev.agentsandbox.runs;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.agentsandbox.store.AuditEvent;
import dev.agentsandbox.store.AuditLog;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Turns a run's proxy decisions into audit rows and keeps them for the run's result: every refusal
 * becomes {@code agent_sandbox.egress.deny}, the first allowed connection to each host {@code
 * agent_sandbox.egress.allow}.
 *
 * <p>Thread-safe. Each row is appended (and committed) before the next decision is read, so a crash
 * loses no refusal the proxy had reported.
 */
final class EgressRecorder {
  /** The prefix of both egress audit row types. */
  static final String EGRESS = "agent_sandbox.egress";

  static final String ALLOW = EGRESS + ".allow";
  static final String DENY = EGRESS + ".deny";
  private static final Logger LOG = LoggerFactory.getLogger(EgressRecorder.class);

  private final String runId;
  private final String agent;
  private final String actor;
  private final AuditLog audit;
  private final ObjectMapper json;
  private final int keep;
  private final List<JsonNode> decisions = new ArrayList<>();
  private final Set<String> allowedHosts = new HashSet<>();
  private long dropped;
  private long malformed;

  EgressRecorder(
      String runId, String agent, String actor, AuditLog audit, ObjectMapper json, int keep) {
    this.runId = runId;
    this.agent = agent;
    this.actor = actor;
    this.audit = audit;
    this.json = json;
    this.keep = keep;
  }

  synchronized void accept(String line) {
    JsonNode node;
    try {
      node = json.readTree(line);
    } catch (IOException e) {
      node = null;
    }
    if (node == null || !node.isObject() || !node.path("decision").isTextual()) {
      malformed++;
      LOG.warn("run {}: ignoring a proxy output line that is not a decision", runId);
      return;
    }
    if (decisions.size() < keep) {
      decisions.add(node);
    } else {
      dropped++;
    }
    String decision = node.path("decision").asText();
    String host = node.path("host").asText("");
    if (decision.equals("deny")) {
      audit.append(new AuditEvent(DENY, actor, agent, runId, auditData(node)));
    } else if (decision.equals("allow") && allowedHosts.add(host)) {
      audit.append(new AuditEvent(ALLOW, actor, agent, runId, auditData(node)));
    }
  }

  private JsonNode auditData(JsonNode decision) {
    ObjectNode data = json.createObjectNode();
    for (String field :
        List.of(
            "time",
            "client",
            "method",
            "host",
            "port",
            "reason",
            "address",
            "first",
            // On an inspected host: the request's normalised path, the upstream's status and the
            // injected credential's name (never a value: the proxy has none in its decisions).
            "path",
            "status",
            "credential")) {
      if (decision.has(field)) {
        data.set(field, decision.get(field));
      }
    }
    return data;
  }

  /** The decisions kept for the result, oldest first. */
  synchronized List<JsonNode> decisions() {
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
}
