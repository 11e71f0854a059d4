package dev.agentsandbox.store.internal;

import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Instant;

/** Reading and binding the nullable and epoch-millisecond columns the same way in both dialects. */
public final class Columns {

  private Columns() {}

  public static void setMillis(PreparedStatement statement, int index, Instant value)
      throws SQLException {
    if (value == null) {
      statement.setNull(index, Types.BIGINT);
    } else {
      statement.setLong(index, value.toEpochMilli());
    }
  }

  public static void setNullableInt(PreparedStatement statement, int index, Integer value)
      throws SQLException {
    if (value == null) {
      statement.setNull(index, Types.INTEGER);
    } else {
      statement.setInt(index, value);
    }
  }

  public static Instant instant(ResultSet rows, String column) throws SQLException {
    long millis = rows.getLong(column);
    return rows.wasNull() ? null : Instant.ofEpochMilli(millis);
  }

  public static Integer nullableInt(ResultSet rows, String column) throws SQLException {
    int value = rows.getInt(column);
    return rows.wasNull() ? null : value;
  }

  /** Truncates to what the columns hold, so a value read back equals the value written. */
  public static Instant millis(Instant value) {
    return value == null ? null : Instant.ofEpochMilli(value.toEpochMilli());
  }
}
