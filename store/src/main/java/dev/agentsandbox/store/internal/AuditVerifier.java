package dev.agentsandbox.store.internal;

import dev.agentsandbox.store.AuditHead;
import dev.agentsandbox.store.VerifyResult;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Optional;

/**
 * Walks the audit chain in id order, page by page, and names every row that breaks it. Hashes are
 * recomputed from the stored column values (the data column's text as stored), so any edit of a
 * hashed column shows up on the edited row itself.
 */
public final class AuditVerifier {

  private static final int PAGE = 1000;
  private static final int MAX_PROBLEMS = 100;

  private final Database database;

  public AuditVerifier(Database database) {
    this.database = database;
  }

  /** Verifies the whole chain; {@code anchor} (nullable) is a head recorded outside the store. */
  public VerifyResult verify(AuditHead anchor) {
    return verifyFrom(new AuditHead(0, AuditHash.GENESIS), anchor, List.of());
  }

  /**
   * Verifies the chain from {@code start}, a row verified before (its id and hash): that row still
   * has that hash, every row after it links to the one before and hashes to its contents, and the
   * chain head and {@code anchor} (nullable) name rows that exist with their hashes. Also re-hashes
   * each of {@code recheck}, rows at or before {@code start}, and checks the row after each still
   * links to it. Rows before {@code start} are otherwise not read again.
   */
  public VerifyResult verifyFrom(AuditHead start, AuditHead anchor, Collection<Long> recheck) {
    // The head is read first: rows appended while the walk runs lie beyond it and are checked as
    // links of the chain, but the head comparison concerns the row it named when it was read.
    Optional<AuditHead> storedHead =
        database.read("read the audit chain head", AuditVerifier::readHead);
    Walk walk = new Walk(storedHead.orElse(null), anchor, start);
    database.read(
        "verify audit rows",
        c -> {
          walk.known(c, start, "the verified row " + start);
          if (storedHead.isPresent() && storedHead.get().id() <= start.id()) {
            walk.known(c, storedHead.get(), "the chain head");
          }
          if (anchor != null && anchor.id() <= start.id()) {
            walk.known(c, anchor, "the anchored head " + anchor);
          }
          for (long id : new java.util.TreeSet<>(recheck)) {
            if (id <= start.id()) {
              walk.recheck(c, id);
            }
          }
          return null;
        });
    boolean more = true;
    while (more) {
      long after = walk.lastId;
      more = database.read("verify the audit log", c -> walk.page(c, after));
    }
    return walk.result();
  }

  private static Optional<AuditHead> readHead(Connection connection) throws SQLException {
    try (PreparedStatement statement =
            connection.prepareStatement("SELECT last_id, last_hash FROM audit_head WHERE id = 1");
        ResultSet rows = statement.executeQuery()) {
      if (!rows.next() || rows.getString("last_hash") == null) {
        return Optional.empty();
      }
      return Optional.of(new AuditHead(rows.getLong("last_id"), rows.getString("last_hash")));
    }
  }

  /** The state of one walk along the chain. */
  private static final class Walk {
    private final AuditHead storedHead;
    private final AuditHead anchor;
    private final List<String> problems = new ArrayList<>();
    private long suppressed;
    private long checked;
    private long lastId;
    private String lastHash = AuditHash.GENESIS;
    private boolean storedHeadSeen;
    private boolean anchorSeen;

    /** {@code storedHead} is null when the audit_head row is gone. */
    Walk(AuditHead storedHead, AuditHead anchor, AuditHead start) {
      this.storedHead = storedHead;
      this.anchor = anchor;
      this.lastId = start.id();
      this.lastHash = start.hash();
      if (storedHead == null) {
        problem(
            "the chain head row (audit_head) is missing: deleted by hand; the newest rows cannot"
                + " be checked without an anchor");
      }
    }

    /**
     * Checks a row that lies at or before where the walk starts: it exists with {@code head}'s
     * hash. Marks the chain head and the anchor seen when it is one of them.
     */
    void known(Connection connection, AuditHead head, String what) throws SQLException {
      if (head.id() == 0) {
        return;
      }
      try (PreparedStatement statement =
          connection.prepareStatement("SELECT hash FROM audit_log WHERE id = ?")) {
        statement.setLong(1, head.id());
        try (ResultSet rows = statement.executeQuery()) {
          if (!rows.next()) {
            problem("row " + head.id() + " is missing: " + what + " names it (deleted)");
          } else if (!rows.getString("hash").equals(head.hash())) {
            problem("row " + head.id() + ": hash differs from " + what + " (replaced)");
          }
        }
      }
      if (storedHead != null && head.id() == storedHead.id()) {
        storedHeadSeen = true;
      }
      if (anchor != null && head.id() == anchor.id()) {
        anchorSeen = true;
      }
    }

    /** Re-hashes one row and checks that the row after it still links to it. */
    void recheck(Connection connection, long id) throws SQLException {
      try (PreparedStatement statement =
          connection.prepareStatement(
              "SELECT id, time_ms, type, actor, agent, run_id, data, prev_hash, hash"
                  + " FROM audit_log WHERE id IN (?, ?) ORDER BY id")) {
        statement.setLong(1, id);
        statement.setLong(2, id + 1);
        try (ResultSet rows = statement.executeQuery()) {
          if (!rows.next() || rows.getLong("id") != id) {
            problem("row " + id + " is missing (deleted)");
            return;
          }
          checked++;
          String hash = rows.getString("hash");
          if (!recomputed(rows).equals(hash)) {
            problem("row " + id + ": hash does not match the row's contents (edited)");
          }
          if (rows.next() && !hash.equals(rows.getString("prev_hash"))) {
            problem(
                "row "
                    + (id + 1)
                    + ": prev_hash does not match the hash of row "
                    + id
                    + " (a row was replaced)");
          }
        }
      }
    }

    private static String recomputed(ResultSet rows) throws SQLException {
      return AuditHash.of(
          rows.getLong("id"),
          rows.getLong("time_ms"),
          rows.getString("type"),
          rows.getString("actor"),
          rows.getString("agent"),
          rows.getString("run_id"),
          rows.getString("data"),
          rows.getString("prev_hash"));
    }

    /** Checks the next page; returns whether a full page was read (there may be more). */
    boolean page(Connection connection, long after) throws SQLException {
      int count = 0;
      try (PreparedStatement statement =
          connection.prepareStatement(
              "SELECT id, time_ms, type, actor, agent, run_id, data, prev_hash, hash"
                  + " FROM audit_log WHERE id > ? ORDER BY id LIMIT ?")) {
        statement.setLong(1, after);
        statement.setInt(2, PAGE);
        try (ResultSet rows = statement.executeQuery()) {
          while (rows.next()) {
            count++;
            check(rows);
          }
        }
      }
      return count == PAGE;
    }

    private void check(ResultSet rows) throws SQLException {
      long id = rows.getLong("id");
      String prevHash = rows.getString("prev_hash");
      String hash = rows.getString("hash");
      checked++;
      long expectedId = lastId + 1;
      if (id > expectedId) {
        problem(
            id == expectedId + 1
                ? "row " + expectedId + " is missing before row " + id + " (deleted)"
                : "rows "
                    + expectedId
                    + ".."
                    + (id - 1)
                    + " are missing before row "
                    + id
                    + " (deleted)");
      } else if (id < expectedId) {
        problem("row " + id + ": id is out of sequence (expected " + expectedId + "; inserted)");
      }
      if (!lastHash.equals(prevHash)) {
        problem(
            "row "
                + id
                + ": prev_hash does not match the hash of "
                + (lastId == 0 ? "the chain start" : "row " + lastId)
                + " (a row before it was deleted, replaced or reordered)");
      }
      if (!recomputed(rows).equals(hash)) {
        problem("row " + id + ": hash does not match the row's contents (edited)");
      }
      if (storedHead != null && id == storedHead.id()) {
        storedHeadSeen = true;
        if (!storedHead.hash().equals(hash)) {
          problem("row " + id + ": hash differs from the one the chain head recorded (replaced)");
        }
      }
      if (anchor != null && id == anchor.id()) {
        anchorSeen = true;
        if (!anchor.hash().equals(hash)) {
          problem("row " + id + ": hash differs from the anchored head " + anchor + " (replaced)");
        }
      }
      lastId = id;
      lastHash = hash;
    }

    private void problem(String text) {
      if (problems.size() < MAX_PROBLEMS) {
        problems.add(text);
      } else {
        suppressed++;
      }
    }

    VerifyResult result() {
      if (storedHead != null && storedHead.id() > 0 && !storedHeadSeen) {
        problem(
            "row "
                + storedHead.id()
                + " is missing: the chain head records it as the newest row (rows at the end"
                + " were deleted)");
      }
      if (anchor != null && anchor.id() > 0 && !anchorSeen) {
        problem(
            "row "
                + anchor.id()
                + " is missing: the anchored head "
                + anchor
                + " names it (rows at the end were deleted)");
      }
      List<String> all = new ArrayList<>(problems);
      if (suppressed > 0) {
        all.add("... and " + suppressed + " more problems");
      }
      return new VerifyResult(all.isEmpty(), checked, all);
    }
  }
}
