package dev.agentsandbox.store;

import dev.agentsandbox.store.internal.Database;
import dev.agentsandbox.store.internal.Dialect;
import dev.agentsandbox.store.internal.EgressIndexBackfill;
import dev.agentsandbox.store.internal.JdbcUrl;
import dev.agentsandbox.store.internal.PostgresDatabase;
import dev.agentsandbox.store.internal.SqliteDatabase;
import java.io.IOException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.sql.SQLException;
import java.time.Clock;
import java.util.Objects;
import java.util.Set;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.FlywayException;
import org.flywaydb.core.api.pattern.ValidatePattern;
import org.sqlite.SQLiteDataSource;

/**
 * The control plane's database: configuration versions, the audit log, API tokens, runs and the
 * steps of sessions, on an embedded SQLite file or a PostgreSQL server. Opening runs the schema
 * migrations. Thread-safe; one instance per process, closed at shutdown.
 */
public final class Store implements AutoCloseable {

  private static final String SQLITE_PREFIX = "jdbc:sqlite:";
  private static final String POSTGRES_PREFIX = "jdbc:postgresql:";

  /** The database file, then what SQLite keeps beside it. */
  private static final java.util.List<String> SQLITE_FILES =
      java.util.List.of("", "-wal", "-shm", "-journal");

  private static final Set<PosixFilePermission> OWNER_ONLY =
      PosixFilePermissions.fromString("rw-------");
  private static final FileAttribute<Set<PosixFilePermission>> OWNER_ONLY_FILE =
      PosixFilePermissions.asFileAttribute(OWNER_ONLY);
  private static final FileAttribute<Set<PosixFilePermission>> OWNER_ONLY_FOLDER =
      PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------"));

  private final Database database;
  private final ConfigRepository configs;
  private final AuditLog audit;
  private final TokenStore tokens;
  private final RunRepository runs;
  private final StepRepository steps;
  private final EgressIndex egress;

  private Store(Database database, Clock clock) {
    this.database = database;
    this.audit = new AuditLog(database, clock);
    this.configs = new ConfigRepository(database, audit, clock);
    this.tokens = new TokenStore(database, audit, clock, new SecureRandom());
    this.runs = new RunRepository(database);
    this.steps = new StepRepository(database);
    this.egress = new EgressIndex(database);
  }

  /**
   * Opens {@code url} ({@code jdbc:sqlite:/path/file.db} or {@code
   * jdbc:postgresql://host:port/db?user=..&password=..}) and migrates its schema.
   *
   * @throws UnableToOpenStoreException when the URL is not supported, the database cannot be
   *     reached or the migration fails; the message never contains the password
   */
  public static Store open(String url) {
    return open(url, Clock.systemUTC());
  }

  /** Like {@link #open(String)}, with the clock that stamps rows (tests pin it). */
  public static Store open(String url, Clock clock) {
    Objects.requireNonNull(url, "url");
    Objects.requireNonNull(clock, "clock");
    if (url.startsWith(SQLITE_PREFIX)) {
      return new Store(openSqlite(url), clock);
    }
    if (url.startsWith(POSTGRES_PREFIX)) {
      return new Store(openPostgres(JdbcUrl.parse(url)), clock);
    }
    throw new UnableToOpenStoreException(
        "open the store at "
            + JdbcUrl.parse(url).redacted()
            + ": unsupported URL (use jdbc:sqlite:/path/file.db or"
            + " jdbc:postgresql://host:port/db?user=NAME&password=SECRET)");
  }

  private static Database openSqlite(String url) {
    String location = url.substring(SQLITE_PREFIX.length());
    int question = location.indexOf('?');
    if (question >= 0) {
      location = location.substring(0, question);
    }
    if (location.isBlank() || location.startsWith(":memory:") || location.startsWith("file:")) {
      throw new UnableToOpenStoreException(
          "open the SQLite store at "
              + url
              + ": only a file path is supported (use jdbc:sqlite:/path/file.db)");
    }
    Path file;
    try {
      file = Path.of(location).toAbsolutePath();
      Path parent = file.getParent();
      if (parent != null) {
        Files.createDirectories(parent, OWNER_ONLY_FOLDER);
      }
    } catch (IOException | InvalidPathException e) {
      throw new UnableToOpenStoreException(
          "open the SQLite store at "
              + location
              + ": cannot create its directory: "
              + e.getMessage()
              + " (choose a writable path)",
          e);
    }
    ownerOnly(file);
    SQLiteDataSource migrationSource = new SQLiteDataSource(SqliteDatabase.config());
    migrationSource.setUrl(SQLITE_PREFIX + file);
    migrate(migrationSource, Dialect.SQLITE, file.toString());
    try {
      return SqliteDatabase.open(file);
    } catch (SQLException e) {
      throw new UnableToOpenStoreException(
          "open the SQLite store at " + file + ": " + e.getMessage() + " (check permissions)", e);
    }
  }

  /**
   * Makes the database file and the files SQLite keeps beside it readable by their owner only (the
   * audit log, token hashes, every run's command and output tail are in them). SQLite creates its
   * write-ahead log, shared-memory index and journal with the database file's own mode, so a
   * database file that is 0600 before SQLite first opens it keeps all of them 0600; one an older
   * version left 0644 is narrowed now, with those beside it.
   */
  private static void ownerOnly(Path file) {
    try {
      try {
        Files.createFile(file, OWNER_ONLY_FILE);
      } catch (FileAlreadyExistsException existing) {
        // narrowed below
      }
      for (String suffix : SQLITE_FILES) {
        Path beside = file.resolveSibling(file.getFileName() + suffix);
        if (Files.isRegularFile(beside, LinkOption.NOFOLLOW_LINKS)
            && !Files.getPosixFilePermissions(beside, LinkOption.NOFOLLOW_LINKS)
                .equals(OWNER_ONLY)) {
          Files.setPosixFilePermissions(beside, OWNER_ONLY);
        }
      }
    } catch (IOException | UnsupportedOperationException e) {
      throw new UnableToOpenStoreException(
          "open the SQLite store at "
              + file
              + ": cannot make it readable by its owner only: "
              + e
              + " (run serve as the file's owner, or chmod 600 it and its -wal and -shm files)",
          e);
    }
  }

  private static Database openPostgres(JdbcUrl url) {
    PostgresDatabase database;
    try {
      database = PostgresDatabase.open(url);
    } catch (RuntimeException e) {
      throw new UnableToOpenStoreException(
          "open the PostgreSQL store at "
              + url.redacted()
              + ": "
              + rootMessage(e)
              + " (check that the server runs, the URL's host, port, database, user and password)",
          e);
    }
    try {
      migrate(database.dataSource(), Dialect.POSTGRESQL, url.redacted());
      return database;
    } catch (RuntimeException e) {
      database.close();
      throw e;
    }
  }

  private static void migrate(DataSource dataSource, Dialect dialect, String where) {
    try {
      Flyway.configure()
          .dataSource(dataSource)
          .locations("classpath:db/migration/" + dialect.id())
          // Java migrations, the same on both dialects (the egress index's backfill).
          .javaMigrations(new EgressIndexBackfill())
          .failOnMissingLocations(true)
          .validateMigrationNaming(true)
          // No pattern: a migration applied by a newer agent-sandbox fails validation instead of
          // being ignored, so an older binary never writes to a schema it does not know.
          .ignoreMigrationPatterns(new ValidatePattern[0])
          .load()
          .migrate();
    } catch (FlywayException e) {
      throw new UnableToOpenStoreException(
          "migrate the "
              + dialect.id()
              + " store at "
              + where
              + ": "
              + rootMessage(e)
              + " (a newer agent-sandbox may have migrated it, or the role may lack CREATE rights)",
          e);
    }
  }

  private static String rootMessage(Throwable e) {
    Throwable root = e;
    while (root.getCause() != null && root.getCause() != root) {
      root = root.getCause();
    }
    return root.getMessage() == null ? root.getClass().getSimpleName() : root.getMessage();
  }

  /** True when a trivial query against the schema succeeds (for {@code /readyz}). */
  public boolean ping() {
    return database.ping();
  }

  /** {@code "sqlite"} or {@code "postgresql"}. */
  public String dialect() {
    return database.dialect().id();
  }

  public ConfigRepository configs() {
    return configs;
  }

  public AuditLog audit() {
    return audit;
  }

  public TokenStore tokens() {
    return tokens;
  }

  public RunRepository runs() {
    return runs;
  }

  /** The steps of sessions. */
  public StepRepository steps() {
    return steps;
  }

  /** The egress rows of the audit log as typed tallies (proposals, impacts of a change). */
  public EgressIndex egress() {
    return egress;
  }

  /**
   * This store's identity: 32 lower-case hex digits drawn once, when the store's schema was created
   * or migrated to hold it, and the same for every process and replica that opens it, at every
   * start. Control planes label what they create on a shared Docker daemon with it.
   */
  public String identity() {
    return database.read(
        "read the store's identity",
        c -> {
          try (java.sql.PreparedStatement statement =
                  c.prepareStatement("SELECT store_id FROM store_identity WHERE singleton = 1");
              java.sql.ResultSet rows = statement.executeQuery()) {
            if (!rows.next()) {
              throw new UnableToAccessStoreException(
                  "read the store's identity: the store_identity row is missing", null);
            }
            return rows.getString(1);
          }
        });
  }

  /** The connection source, for tests in this package that look at session settings. */
  Database database() {
    return database;
  }

  @Override
  public void close() {
    database.close();
  }
}
