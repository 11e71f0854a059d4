package dev.agentsandbox.cli;

import dev.agentsandbox.store.Store;
import java.nio.file.Path;
import picocli.CommandLine.Option;

/**
 * Where the store is: {@code --db URL}, else {@code AGENT_SANDBOX_DB}, else SQLite under ./data.
 */
final class StoreOptions {
  /** The SQLite file used when nothing else is said, relative to the working directory. */
  static final String DEFAULT_FILE = "data/agent-sandbox.db";

  @Option(
      names = "--db",
      paramLabel = "URL",
      description =
          "Store URL: jdbc:sqlite:/path/file.db or jdbc:postgresql://host:port/db?user=..&password=.."
              + " (env AGENT_SANDBOX_DB; default jdbc:sqlite:./"
              + DEFAULT_FILE
              + ")")
  String url;

  /** The URL in force: the option, then the environment, then the default file. */
  String resolve() {
    return Setting.of(
        url, "AGENT_SANDBOX_DB", () -> "jdbc:sqlite:" + Path.of(DEFAULT_FILE).toAbsolutePath());
  }

  Store open() {
    return Store.open(resolve());
  }
}
