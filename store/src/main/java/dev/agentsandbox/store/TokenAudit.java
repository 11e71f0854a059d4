package dev.agentsandbox.store;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.agentsandbox.policy.config.AgentGrant;
import java.time.Instant;

/**
 * The audit rows of the tokens an operator manages ({@code token create}, {@code token revoke}, the
 * first admin token): each kind's name and wire form in one place. A row names the token, its
 * scopes, the agents it is limited to ({@code null}: every agent) and its expiry; never its secret,
 * nor the secret's hash.
 *
 * <pre>
 * agent_sandbox.token.create  {"name": "ci", "scopes": ["agent_sandbox.read"], "agents": null,
 *                              "expires_at": null}
 * agent_sandbox.token.revoke  {"name": "ci", "scopes": [...], "agents": ["helper"], "expires_at": ...,
 *                              "created_at": ...}
 * </pre>
 *
 * <p>Run tokens (minted for one run and revoked with it) have no rows of their own: the run's
 * {@code agent_sandbox.credentials.issue} row names them.
 */
public final class TokenAudit {
  /** A token was created. */
  public static final String CREATE = "agent_sandbox.token.create";

  /** A token was revoked. */
  public static final String REVOKE = "agent_sandbox.token.revoke";

  private TokenAudit() {}

  static AuditEvent created(
      String actor, String name, Iterable<String> scopes, AgentGrant agents, Instant expiresAt) {
    ObjectNode data = JsonNodeFactory.instance.objectNode();
    data.put("name", name);
    ArrayNode list = data.putArray("scopes");
    new java.util.TreeSet<String>(toList(scopes)).forEach(list::add);
    agents(data, agents);
    data.put("expires_at", expiresAt == null ? null : expiresAt.toString());
    return new AuditEvent(CREATE, actor, null, null, data);
  }

  static AuditEvent revoked(String actor, TokenInfo token) {
    ObjectNode data = JsonNodeFactory.instance.objectNode();
    data.put("name", token.name());
    ArrayNode list = data.putArray("scopes");
    token.scopes().forEach(list::add);
    agents(data, token.agents());
    data.put("expires_at", token.expiresAt() == null ? null : token.expiresAt().toString());
    data.put("created_at", token.createdAt().toString());
    return new AuditEvent(REVOKE, actor, null, null, data);
  }

  /** {@code "agents": null} for every agent, else the names it is limited to. */
  private static void agents(ObjectNode data, AgentGrant agents) {
    if (agents.limited()) {
      ArrayNode named = data.putArray("agents");
      agents.named().forEach(named::add);
    } else {
      data.putNull("agents");
    }
  }

  private static java.util.List<String> toList(Iterable<String> values) {
    java.util.List<String> list = new java.util.ArrayList<>();
    values.forEach(list::add);
    return list;
  }
}
