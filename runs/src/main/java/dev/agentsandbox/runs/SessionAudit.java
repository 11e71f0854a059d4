package dev.agentsandbox.runs;

import dev.agentsandbox.policy.event.FilesTransferred;
import dev.agentsandbox.policy.event.SessionClosed;
import dev.agentsandbox.policy.event.SessionIdled;
import dev.agentsandbox.policy.event.StepEnded;
import dev.agentsandbox.policy.event.StepKillRequested;
import dev.agentsandbox.policy.event.StepRefused;
import dev.agentsandbox.policy.event.StepStarted;
import dev.agentsandbox.runs.audit.RunTrail;
import dev.agentsandbox.runs.session.StepView;
import java.time.Instant;
import java.util.List;
import java.util.Optional;

/**
 * The rows only sessions write, each as its typed event (policy.event) through the run's trail
 * (docs/api.md, "Audit rows of a session"). Never a file's content, an env value or a credential:
 * commands are redacted before they get here, environments are given by key. Thread-safe.
 */
final class SessionAudit {
  private final RunTrail trail;

  SessionAudit(RunTrail trail) {
    this.trail = trail;
  }

  /** Before a step starts: who, what, where, with which env keys and how much stdin. */
  void execStart(
      String actor,
      String agent,
      String runId,
      int step,
      List<String> command,
      String cwd,
      List<String> envKeys,
      long stdinBytes,
      boolean background,
      int timeoutSeconds) {
    trail.append(
        actor,
        agent,
        runId,
        new StepStarted(step, command, cwd, envKeys, stdinBytes, background, timeoutSeconds));
  }

  /** When a step ended, however it ended. */
  void exec(String actor, String agent, StepView step) {
    trail.append(
        actor,
        agent,
        step.runId(),
        new StepEnded(
            step.step(),
            step.command(),
            step.cwd(),
            step.end().orElseThrow().wireName(),
            Optional.ofNullable(step.exitStatus()),
            step.durationMs(),
            step.outputBytes(),
            step.stdinBytes(),
            step.egressDenied(),
            step.detail().isEmpty() ? Optional.empty() : Optional.of(step.detail())));
  }

  /** A step refused before it got a number: why, the command redacted, the env keys. */
  void execRefused(
      String actor,
      String agent,
      String runId,
      String error,
      String message,
      List<String> command,
      List<String> envKeys) {
    trail.append(actor, agent, runId, new StepRefused(error, message, command, envKeys));
  }

  /** One put or get, when it ended, succeeded or refused. */
  void files(String actor, String agent, String runId, FilesTransferred transfer) {
    trail.append(actor, agent, runId, transfer);
  }

  /** A {@code DELETE .../steps/{n}}, before the step is killed. */
  void stepKill(String actor, String agent, String runId, int step) {
    trail.append(actor, agent, runId, new StepKillRequested(step, actor));
  }

  /** A {@code DELETE .../runs/{id}} of a session, before it is closed. */
  void close(String actor, String agent, String runId, int runningSteps) {
    trail.append(actor, agent, runId, new SessionClosed(actor, runningSteps));
  }

  /** The idle clock ran out, before the session is ended. */
  void idle(String actor, String agent, String runId, int idleSeconds, Instant lastActivity) {
    trail.append(actor, agent, runId, new SessionIdled(idleSeconds, lastActivity));
  }
}
