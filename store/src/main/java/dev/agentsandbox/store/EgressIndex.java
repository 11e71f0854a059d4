package dev.agentsandbox.store;

import dev.agentsandbox.store.internal.Database;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * The egress rows of the audit log ({@code agent_sandbox.egress.allow}, {@code .deny}) as typed
 * entries, read from the index each append writes with its row ({@code audit_egress}). The one way
 * the control plane reads egress decisions in bulk. Thread-safe.
 */
public final class EgressIndex {
  /** Which decisions to read. */
  public enum Decisions {
    /** Refusals only. */
    DENY("deny"),
    /** Allowed first connections only. */
    ALLOW("allow"),
    /** Both. */
    BOTH(null);

    private final String column;

    Decisions(String column) {
      this.column = column;
    }
  }

  private final Database database;

  EgressIndex(Database database) {
    this.database = database;
  }

  /**
   * Streams {@code agent}'s indexed decisions recorded at or after {@code since}, one per egress
   * row (an aggregated row with its count), to {@code sink} in no particular order, and returns how
   * many it streamed. The read is one range of the covering index, with no sorting or grouping in
   * SQL (grouping 200,000 rows there cost more than the callers' own tallies): callers aggregate.
   * The sink runs while the read holds its connection: keep it quick.
   */
  public long scan(String agent, Instant since, Decisions which, Consumer<EgressTally> sink) {
    Objects.requireNonNull(agent, "agent");
    Objects.requireNonNull(since, "since");
    Optional<String> decision = Optional.ofNullable(which.column);
    String sql =
        "SELECT decision, host, port, reason, run_id, count, time_ms FROM audit_egress"
            + " WHERE agent = ?"
            + (decision.isPresent() ? " AND decision = ?" : "")
            + " AND time_ms >= ?";
    return database.read(
        "read the egress index of agent " + agent,
        c -> {
          long streamed = 0;
          try (PreparedStatement statement = c.prepareStatement(sql)) {
            int i = 1;
            statement.setString(i++, agent);
            if (decision.isPresent()) {
              statement.setString(i++, decision.get());
            }
            statement.setLong(i, since.toEpochMilli());
            statement.setFetchSize(5_000);
            try (ResultSet rows = statement.executeQuery()) {
              while (rows.next()) {
                Instant at = Instant.ofEpochMilli(rows.getLong(7));
                sink.accept(
                    new EgressTally(
                        agent,
                        rows.getString(1),
                        rows.getString(2),
                        rows.getInt(3),
                        rows.getString(4),
                        rows.getString(5),
                        rows.getLong(6),
                        at,
                        at));
                streamed++;
              }
            }
          }
          return streamed;
        });
  }
}
