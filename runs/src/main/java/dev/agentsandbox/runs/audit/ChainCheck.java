package dev.agentsandbox.runs.audit;

import dev.agentsandbox.store.AuditHead;
import dev.agentsandbox.store.AuditLog;
import dev.agentsandbox.store.VerifyResult;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The chain statement of a run's timeline, without walking the whole log each time: the first check
 * of a control plane's life verifies the chain from its first row; each later one walks only the
 * rows appended since the newest row a check passed, re-hashes every row of the run that lies
 * before it, and checks that row still has the hash it had. A full {@link AuditLog#verify()}
 * ({@code GET /audit/verify}, {@code agent-sandbox audit verify}) is what catches an edit of any
 * other older row. Thread-safe.
 */
public final class ChainCheck {
  private final AuditLog audit;
  private final AtomicReference<AuditHead> verified = new AtomicReference<>(new AuditHead(0, ""));

  public ChainCheck(AuditLog audit) {
    this.audit = Objects.requireNonNull(audit, "audit");
  }

  /** Checks the chain up to the newest of {@code rows}, the rows of one run, oldest first. */
  public RunTimeline.Chain check(List<RecordedEvent> rows) {
    if (rows.isEmpty()) {
      return RunTimeline.Chain.nothing("the run has no audit rows");
    }
    RecordedEvent last = rows.get(rows.size() - 1);
    AuditHead anchor = new AuditHead(last.id(), last.hash());
    AuditHead head = audit.head();
    AuditHead from = verified.get();
    VerifyResult result =
        from.id() == 0
            ? audit.verify(anchor)
            : audit.verifyFrom(
                from,
                anchor,
                rows.stream().map(RecordedEvent::id).filter(id -> id <= from.id()).toList());
    if (result.ok()) {
      // The walk covered every row up to the head read before it.
      verified.accumulateAndGet(head, (now, next) -> next.id() > now.id() ? next : now);
    }
    return new RunTimeline.Chain(
        result.ok(),
        java.util.OptionalLong.of(last.id()),
        java.util.Optional.of(last.hash()),
        result.rowsChecked(),
        from.id(),
        result.problems(),
        java.util.Optional.empty());
  }
}
