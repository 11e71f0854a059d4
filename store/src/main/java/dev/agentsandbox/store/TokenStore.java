package dev.agentsandbox.store;

import dev.agentsandbox.policy.config.AgentGrant;
import dev.agentsandbox.store.internal.AuditHash;
import dev.agentsandbox.store.internal.Columns;
import dev.agentsandbox.store.internal.Database;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;

/**
 * API bearer tokens. Only the SHA-256 of each secret is stored: secrets are 32 random bytes, so a
 * fast hash is enough (there is nothing to brute-force), and a leaked table grants nothing.
 * Thread-safe.
 */
public final class TokenStore {

  /** Every secret starts with this, so that scanners and people recognize a leaked one. */
  public static final String SECRET_PREFIX = "asb_";

  /**
   * The scope prefix of a run's own token: {@code agent_sandbox.run.<run id>} grants that run's own
   * endpoints and nothing else.
   */
  public static final String RUN_SCOPE_PREFIX = "agent_sandbox.run.";

  private static final int SECRET_BYTES = 32;
  private static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._@-]{0,99}");
  private static final Pattern SCOPE = Pattern.compile("[a-z][a-z0-9_.]{0,99}");
  private static final String COLUMNS =
      "name, scopes, agents, created_at_ms, expires_at_ms, revoked_at_ms";

  private final Database database;
  private final AuditLog audit;
  private final Clock clock;
  private final SecureRandom random;

  TokenStore(Database database, AuditLog audit, Clock clock, SecureRandom random) {
    this.database = database;
    this.audit = audit;
    this.clock = clock;
    this.random = random;
  }

  /** The only scope of run {@code runId}'s own token. */
  public static String runScope(String runId) {
    return RUN_SCOPE_PREFIX + runId;
  }

  /**
   * Creates a token and returns its secret, which is not retrievable afterwards, with no audit row
   * of its own: for a run's token, which the run's {@code agent_sandbox.credentials.issue} row
   * names. A token an operator asks for is created by {@link #create(String, Set, Instant,
   * String)}.
   *
   * @param expiresAt null for a token that does not expire
   * @throws TokenNameTakenException when an unrevoked, unexpired token already has {@code name}
   */
  public IssuedToken create(String name, Set<String> scopes, Instant expiresAt) {
    return create(name, scopes, expiresAt, null);
  }

  /**
   * Creates a token and appends {@link TokenAudit#CREATE} (its name, scopes and expiry, never the
   * secret) in the same transaction: both or neither.
   *
   * @param actor who asked (the API token's name, or the CLI's {@code cli:USER}); null for no row
   * @throws TokenNameTakenException when an unrevoked, unexpired token already has {@code name}
   */
  public IssuedToken create(String name, Set<String> scopes, Instant expiresAt, String actor) {
    return create(name, scopes, AgentGrant.EVERY, expiresAt, actor);
  }

  /**
   * Creates a token that may see and touch only the agents {@code agents} grants, and appends
   * {@link TokenAudit#CREATE} (its name, scopes, agents and expiry, never the secret) in the same
   * transaction: both or neither. Which scopes a limited token may hold is the caller's rule (the
   * {@code policy.config.Scopes}); the store keeps what it is given.
   *
   * @param actor who asked (the API token's name, or the CLI's {@code cli:USER}); null for no row
   * @throws TokenNameTakenException when an unrevoked, unexpired token already has {@code name}
   */
  public IssuedToken create(
      String name, Set<String> scopes, AgentGrant agents, Instant expiresAt, String actor) {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(scopes, "scopes");
    Objects.requireNonNull(agents, "agents");
    if (!NAME.matcher(name).matches()) {
      throw new IllegalArgumentException(
          "token name "
              + name
              + " is not valid (letters, digits and . _ @ -, starting with a letter or digit, at"
              + " most 100)");
    }
    if (scopes.isEmpty()) {
      throw new IllegalArgumentException("token " + name + " needs at least one scope");
    }
    for (String scope : scopes) {
      if (scope == null || !SCOPE.matcher(scope).matches()) {
        throw new IllegalArgumentException(
            "token scope " + scope + " is not valid (lowercase letters, digits, '.' and '_')");
      }
    }
    Instant now = Instant.ofEpochMilli(clock.millis());
    if (expiresAt != null && !expiresAt.isAfter(now)) {
      throw new IllegalArgumentException(
          "token " + name + " would expire at " + expiresAt + ", which is not in the future");
    }
    byte[] bytes = new byte[SECRET_BYTES];
    random.nextBytes(bytes);
    String secret = SECRET_PREFIX + Base64.getUrlEncoder().withoutPadding().encodeToString(bytes);
    Arrays.fill(bytes, (byte) 0);
    try {
      database.inTransaction(
          "create token " + name,
          c -> {
            retireExpired(c, name, now);
            insert(c, name, AuditHash.sha256Hex(secret), scopes, agents, now, expiresAt);
            if (actor != null) {
              audit.append(c, TokenAudit.created(actor, name, scopes, agents, expiresAt));
            }
            return null;
          });
    } catch (UnableToAccessStoreException e) {
      if (e.getCause() instanceof SQLException sql && database.dialect().isUniqueViolation(sql)) {
        throw new TokenNameTakenException(name);
      }
      throw e;
    }
    return new IssuedToken(name, secret);
  }

  /**
   * The token whose secret was presented, if it exists and is neither revoked nor expired.
   *
   * <p>The lookup is by the SHA-256 of the presented secret; the comparison after it is
   * constant-time. Timing of the index lookup reveals at most something about a hash of an
   * attacker's own guess, never about a stored secret.
   */
  public Optional<TokenInfo> authenticate(String presentedSecret) {
    if (presentedSecret == null
        || !presentedSecret.startsWith(SECRET_PREFIX)
        || presentedSecret.length() > 200) {
      return Optional.empty();
    }
    String presentedHash = AuditHash.sha256Hex(presentedSecret);
    Instant now = Instant.ofEpochMilli(clock.millis());
    return database.read(
        "authenticate a token",
        c -> {
          try (PreparedStatement statement =
              c.prepareStatement(
                  "SELECT secret_hash, " + COLUMNS + " FROM api_token WHERE secret_hash = ?")) {
            statement.setString(1, presentedHash);
            try (ResultSet rows = statement.executeQuery()) {
              if (!rows.next()) {
                return Optional.empty();
              }
              boolean same =
                  MessageDigest.isEqual(
                      presentedHash.getBytes(StandardCharsets.US_ASCII),
                      rows.getString("secret_hash").getBytes(StandardCharsets.US_ASCII));
              TokenInfo info = info(rows);
              return same && info.activeAt(now) ? Optional.of(info) : Optional.empty();
            }
          }
        });
  }

  /** Every token ever created, revoked and expired ones included, oldest first. */
  public List<TokenInfo> list() {
    return database.read(
        "list tokens",
        c -> {
          List<TokenInfo> result = new ArrayList<>();
          try (PreparedStatement statement =
                  c.prepareStatement("SELECT " + COLUMNS + " FROM api_token ORDER BY token_id");
              ResultSet rows = statement.executeQuery()) {
            while (rows.next()) {
              result.add(info(rows));
            }
          }
          return result;
        });
  }

  /**
   * Revokes the unrevoked token called {@code name}, with no audit row: for a run's token, which
   * dies with its run. False when there is none.
   */
  public boolean revoke(String name) {
    return revoke(name, null);
  }

  /**
   * Revokes the unrevoked token called {@code name} and appends {@link TokenAudit#REVOKE} (its
   * name, scopes, expiry and creation time) in the same transaction. False, and no row, when there
   * is none.
   *
   * @param actor who asked; null for no row
   */
  public boolean revoke(String name, String actor) {
    Objects.requireNonNull(name, "name");
    long now = clock.millis();
    return database.inTransaction(
        "revoke token " + name,
        c -> {
          Optional<TokenInfo> unrevoked = Optional.empty();
          if (actor != null) {
            try (PreparedStatement find =
                c.prepareStatement(
                    "SELECT "
                        + COLUMNS
                        + " FROM api_token WHERE name = ? AND revoked_at_ms IS NULL")) {
              find.setString(1, name);
              try (ResultSet rows = find.executeQuery()) {
                if (rows.next()) {
                  unrevoked = Optional.of(info(rows));
                }
              }
            }
          }
          boolean revoked;
          try (PreparedStatement statement =
              c.prepareStatement(
                  "UPDATE api_token SET revoked_at_ms = ? WHERE name = ? AND revoked_at_ms IS"
                      + " NULL")) {
            statement.setLong(1, now);
            statement.setString(2, name);
            revoked = statement.executeUpdate() > 0;
          }
          if (revoked && unrevoked.isPresent()) {
            audit.append(c, TokenAudit.revoked(actor, unrevoked.get()));
          }
          return revoked;
        });
  }

  /** Tokens that are neither revoked nor expired now. */
  public long countActive() {
    long now = clock.millis();
    return database.read(
        "count active tokens",
        c -> {
          try (PreparedStatement statement =
              c.prepareStatement(
                  "SELECT count(*) FROM api_token WHERE revoked_at_ms IS NULL"
                      + " AND (expires_at_ms IS NULL OR expires_at_ms > ?)")) {
            statement.setLong(1, now);
            try (ResultSet rows = statement.executeQuery()) {
              rows.next();
              return rows.getLong(1);
            }
          }
        });
  }

  /**
   * An expired token frees its name: it is marked revoked as of its expiry time, which is when it
   * stopped working, so that the unique index on unrevoked names admits the new one.
   */
  private static void retireExpired(Connection connection, String name, Instant now)
      throws SQLException {
    try (PreparedStatement statement =
        connection.prepareStatement(
            "UPDATE api_token SET revoked_at_ms = expires_at_ms WHERE name = ?"
                + " AND revoked_at_ms IS NULL AND expires_at_ms IS NOT NULL AND expires_at_ms <= ?")) {
      statement.setString(1, name);
      statement.setLong(2, now.toEpochMilli());
      statement.executeUpdate();
    }
  }

  private static void insert(
      Connection connection,
      String name,
      String secretHash,
      Set<String> scopes,
      AgentGrant agents,
      Instant now,
      Instant expiresAt)
      throws SQLException {
    try (PreparedStatement statement =
        connection.prepareStatement(
            "INSERT INTO api_token (name, secret_hash, scopes, agents, created_at_ms,"
                + " expires_at_ms) VALUES (?, ?, ?, ?, ?, ?)")) {
      statement.setString(1, name);
      statement.setString(2, secretHash);
      statement.setString(3, String.join(" ", new TreeSet<>(scopes)));
      statement.setString(4, agents.storedForm());
      Columns.setMillis(statement, 5, now);
      Columns.setMillis(statement, 6, expiresAt);
      statement.executeUpdate();
    }
  }

  private static TokenInfo info(ResultSet rows) throws SQLException {
    String scopes = rows.getString("scopes");
    return new TokenInfo(
        rows.getString("name"),
        scopes.isEmpty() ? Set.of() : Set.of(scopes.split(" ")),
        AgentGrant.fromStoredForm(rows.getString("agents")),
        Columns.instant(rows, "created_at_ms"),
        Columns.instant(rows, "expires_at_ms"),
        Columns.instant(rows, "revoked_at_ms"));
  }
}
