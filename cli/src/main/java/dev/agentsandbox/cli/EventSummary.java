package dev.agentsandbox.cli;

import dev.agentsandbox.policy.event.ArtifactsCollected;
import dev.agentsandbox.policy.event.ArtifactsExpired;
import dev.agentsandbox.policy.event.ArtifactsNotCollected;
import dev.agentsandbox.policy.event.CredentialsIssued;
import dev.agentsandbox.policy.event.CredentialsRevoked;
import dev.agentsandbox.policy.event.EgressDenialsCounted;
import dev.agentsandbox.policy.event.EgressRecorded;
import dev.agentsandbox.policy.event.Failed;
import dev.agentsandbox.policy.event.FilesTransferred;
import dev.agentsandbox.policy.event.KillRequested;
import dev.agentsandbox.policy.event.Launched;
import dev.agentsandbox.policy.event.ProxyDied;
import dev.agentsandbox.policy.event.Reaped;
import dev.agentsandbox.policy.event.Refused;
import dev.agentsandbox.policy.event.Revocation;
import dev.agentsandbox.policy.event.RunEvent;
import dev.agentsandbox.policy.event.RuntimeMismatched;
import dev.agentsandbox.policy.event.SessionClosed;
import dev.agentsandbox.policy.event.SessionIdled;
import dev.agentsandbox.policy.event.Started;
import dev.agentsandbox.policy.event.StepEnded;
import dev.agentsandbox.policy.event.StepKillRequested;
import dev.agentsandbox.policy.event.StepRefused;
import dev.agentsandbox.policy.event.StepStarted;
import dev.agentsandbox.policy.event.TimedOut;
import dev.agentsandbox.policy.event.TornDown;
import dev.agentsandbox.runs.audit.RecordedEvent;
import java.util.List;
import java.util.stream.Collectors;

/** One line per audit row of a run, for a person: an exhaustive switch over the vocabulary. */
final class EventSummary {
  private EventSummary() {}

  /** The row's line; a row of another kind, or one that does not read, shows its data. */
  static String of(RecordedEvent row) {
    if (row.event().isEmpty()) {
      return row.problem().map(p -> "unreadable: " + p).orElse(row.dataWithoutLabels().toString());
    }
    return of(row.actor(), row.event().get(), row);
  }

  private static String of(String actor, RunEvent event, RecordedEvent row) {
    return switch (event) {
      case Launched l ->
          "by "
              + actor
              + ": "
              + l.image()
              + " on "
              + l.backend()
              + " ("
              + l.runtime()
              + "): "
              + String.join(" ", l.command());
      case Started s -> "running under " + s.runtime() + ", image " + s.imageId().orElse(s.image());
      case Refused r -> "refused (" + r.reason() + "): " + r.message();
      case CredentialsIssued c -> "issued " + String.join(", ", credentials(c.credentials()));
      case CredentialsRevoked c ->
          "revoked ("
              + c.stage().wireName()
              + "): "
              + (c.live().isEmpty()
                  ? "all " + c.credentials().size()
                  : c.live().stream()
                      .map(EventSummary::notRevoked)
                      .collect(Collectors.joining("; ")));
      case EgressRecorded e -> e.decision() + " " + e.host() + ":" + e.port() + " " + e.reason();
      case EgressDenialsCounted c ->
          "deny "
              + c.count()
              + " more, counted from "
              + c.firstAt()
              + " to "
              + c.lastAt()
              + " ("
              + c.hosts().size()
              + " hosts named"
              + (c.otherHosts() > 0 ? ", " + c.otherHosts() + " to others" : "")
              + ")";
      case KillRequested k -> "kill asked by " + actor;
      case TimedOut t -> "deadline reached after " + t.ttlSeconds() + " s";
      case Failed f -> f.stage().wireName() + ": " + f.message();
      case RuntimeMismatched m -> m.message();
      case ProxyDied p -> p.message();
      case ArtifactsCollected a ->
          a.files().size()
              + " kept ("
              + a.bytes()
              + " bytes"
              + (a.droppedCount() > 0 ? ", " + a.droppedCount() + " dropped" : "")
              + ")"
              + (a.files().isEmpty()
                  ? ""
                  : ": "
                      + a.files().stream()
                          .map(ArtifactsCollected.File::path)
                          .collect(Collectors.joining(", ")));
      case ArtifactsNotCollected a -> "outputs not collected: " + a.reason();
      // As it always read: the data of the row, which says what went and why.
      case ArtifactsExpired a -> row.dataWithoutLabels().toString();
      case TornDown t ->
          (t.end().equals("exit") && t.exitStatus().isPresent()
                  ? "exited with status " + t.exitStatus().get()
                  : "ended: "
                      + t.end()
                      + t.exitStatus().map(s -> " (exit status " + s + ")").orElse(""))
              + (t.removed()
                  ? ", everything removed"
                  : ", not all removed" + t.problem().map(p -> " (" + p + ")").orElse(""));
      case Reaped r -> "ended: -, everything removed (by reaper)";
      case StepStarted s ->
          "step "
              + s.step()
              + " started"
              + (s.background() ? " in the background" : "")
              + " in "
              + s.cwd()
              + ": "
              + String.join(" ", s.command());
      case StepEnded s ->
          "step "
              + s.step()
              + " ended: "
              + s.end()
              + s.exitStatus().map(x -> " (exit status " + x + ")").orElse("")
              + " after "
              + s.durationMs()
              + " ms"
              + (s.egressDenied() > 0 ? ", " + s.egressDenied() + " egress refused" : "");
      case FilesTransferred f ->
          f.op().wireName()
              + " "
              + f.kind().wireName()
              + " "
              + f.path()
              + (f.refused()
                  ? " refused: " + f.error().get() + f.reason().map(r -> " (" + r + ")").orElse("")
                  : f.size().map(n -> ", " + n + " bytes").orElse(""));
      case StepKillRequested s -> "kill of step " + s.step() + " asked by " + actor;
      case StepRefused s -> "step refused (" + s.error() + "): " + s.message();
      case SessionClosed c ->
          "close asked by " + actor + " (" + c.runningSteps() + " steps running)";
      case SessionIdled i ->
          "idle for " + i.idleSeconds() + " s since " + i.lastActivity() + ": ending";
    };
  }

  /** Each credential as {@code name (source, expires T)}: names and expiries, never values. */
  static List<String> credentials(List<CredentialsIssued.Credential> credentials) {
    return credentials.stream()
        .map(c -> c.name() + " (" + c.source() + ", expires " + c.expiresAt() + ")")
        .toList();
  }

  private static String notRevoked(Revocation r) {
    return r.name() + " works until " + r.expiresAt() + " (" + r.problem().orElse("") + ")";
  }
}
