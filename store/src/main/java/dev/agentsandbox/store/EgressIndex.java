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
 * tallies, read from the index each append writes with its row ({@code audit_egress}). The one way
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
   * Streams {@code agent}'s decisions recorded at or after {@code since}, tallied per decision,
   * host, port, reason and run, to {@code sink} (in no particular order), and returns how many
   * tallies it streamed. The sink runs while the read holds its connection: keep it quick.
   */
  public long tally(String agent, Instant since, Decisions which, Consumer<EgressTally> sink) {
    Objects.requireNonNull(agent, "agent");
    Objects.requireNonNull(since, "since");
    Optional<String> decision = Optional.ofNullable(which.column);
    String sql =
        "SELECT decision, host, port, reason, run_id, SUM(count) AS total,"
            + " MIN(time_ms) AS first_ms, MAX(time_ms) AS last_ms FROM audit_egress"
            + " WHERE agent = ?"
            + (decision.isPresent() ? " AND decision = ?" : "")
            + " AND time_ms >= ?"
            + " GROUP BY decision, host, port, reason, run_id";
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
                sink.accept(
                    new EgressTally(
                        agent,
                        rows.getString("decision"),
                        rows.getString("host"),
                        rows.getInt("port"),
                        rows.getString("reason"),
                        rows.getString("run_id"),
                        rows.getLong("total"),
                        Instant.ofEpochMilli(rows.getLong("first_ms")),
                        Instant.ofEpochMilli(rows.getLong("last_ms"))));
                streamed++;
              }
            }
          }
          return streamed;
        });
  }
}
