package dev.agentsandbox.runs;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.agentsandbox.runs.session.StepView;
import dev.agentsandbox.store.AuditEvent;
import dev.agentsandbox.store.AuditLog;
import java.util.List;
import java.util.Map;

/**
 * The audit rows only sessions write, one method per row type, each owning its type's name and its
 * fields (docs/api.md, "Audit rows of a session"). Never a file's content, an env value or a
 * credential: commands are redacted before they get here, environments are given by key. Kept apart
 * so that the rows move onto typed events as one piece. Thread-safe.
 */
final class SessionAudit {
  static final String EXEC_START = "agent_sandbox.exec.start";
  static final String EXEC = "agent_sandbox.exec";
  static final String EXEC_REFUSED = "agent_sandbox.exec.refused";
  static final String FILES = "agent_sandbox.files";
  static final String STEP_KILL = "agent_sandbox.step.kill";
  static final String CLOSE = "agent_sandbox.close";
  static final String IDLE = "agent_sandbox.idle";

  private final AuditLog audit;
  private final ObjectMapper json;

  SessionAudit(AuditLog audit, ObjectMapper json) {
    this.audit = audit;
    this.json = json;
  }

  /** Before a step starts: who, what, where, with which env keys and how much stdin. */
  void execStart(
      String actor,
      String agent,
      String runId,
      int step,
      List<String> command,
      String cwd,
      Iterable<String> envKeys,
      long stdinBytes,
      boolean background,
      int timeoutSeconds) {
    ObjectNode data = json.createObjectNode();
    data.put("step", step);
    strings(data.putArray("command"), command);
    data.put("cwd", cwd);
    ArrayNode keys = data.putArray("env_keys");
    envKeys.forEach(keys::add);
    data.put("stdin_bytes", stdinBytes);
    data.put("background", background);
    data.put("timeout_seconds", timeoutSeconds);
    audit.append(new AuditEvent(EXEC_START, actor, agent, runId, data));
  }

  /** When a step ended, however it ended. */
  void exec(String actor, String agent, StepView step) {
    ObjectNode data = json.createObjectNode();
    data.put("step", step.step());
    strings(data.putArray("command"), step.command());
    data.put("cwd", step.cwd());
    data.put("end", step.end().map(e -> e.wireName()).orElse(null));
    if (step.exitStatus() == null) {
      data.putNull("exit_status");
    } else {
      data.put("exit_status", step.exitStatus());
    }
    data.put("duration_ms", step.durationMs());
    data.put("output_bytes", step.outputBytes());
    data.put("stdin_bytes", step.stdinBytes());
    data.put("egress_denied", step.egressDenied());
    if (!step.detail().isEmpty()) {
      data.put("detail", step.detail());
    }
    audit.append(new AuditEvent(EXEC, actor, agent, step.runId(), data));
  }

  /** A step refused before it got a number: why, the command redacted, the env keys. */
  void execRefused(
      String actor,
      String agent,
      String runId,
      String error,
      String message,
      List<String> command,
      Iterable<String> envKeys) {
    ObjectNode data = json.createObjectNode();
    data.put("error", error);
    data.put("message", message);
    strings(data.putArray("command"), command);
    ArrayNode keys = data.putArray("env_keys");
    envKeys.forEach(keys::add);
    audit.append(new AuditEvent(EXEC_REFUSED, actor, agent, runId, data));
  }

  /**
   * One put or get, when it ended, succeeded or refused.
   *
   * @param fields the row's fields besides {@code op} and {@code path}: {@code kind}, {@code size},
   *     {@code sha256}, {@code files}, and when refused {@code error} and {@code reason}
   */
  void files(
      String actor,
      String agent,
      String runId,
      String op,
      String path,
      Map<String, Object> fields) {
    ObjectNode data = json.createObjectNode();
    data.put("op", op);
    data.put("path", path);
    fields.forEach((name, value) -> data.set(name, json.valueToTree(value)));
    audit.append(new AuditEvent(FILES, actor, agent, runId, data));
  }

  /** A {@code DELETE .../steps/{n}}, before the step is killed. */
  void stepKill(String actor, String agent, String runId, int step) {
    ObjectNode data = json.createObjectNode();
    data.put("step", step);
    data.put("requested_by", actor);
    audit.append(new AuditEvent(STEP_KILL, actor, agent, runId, data));
  }

  /** A {@code DELETE .../runs/{id}} of a session, before it is closed. */
  void close(String actor, String agent, String runId, int runningSteps) {
    ObjectNode data = json.createObjectNode();
    data.put("requested_by", actor);
    data.put("running_steps", runningSteps);
    audit.append(new AuditEvent(CLOSE, actor, agent, runId, data));
  }

  /** The idle clock ran out, before the session is ended. */
  void idle(String actor, String agent, String runId, int idleSeconds, String lastActivity) {
    ObjectNode data = json.createObjectNode();
    data.put("idle_seconds", idleSeconds);
    data.put("last_activity", lastActivity);
    audit.append(new AuditEvent(IDLE, actor, agent, runId, data));
  }

  private static void strings(ArrayNode array, List<String> values) {
    values.forEach(array::add);
  }
}
