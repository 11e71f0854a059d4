package dev.agentsandbox.server;

import dev.agentsandbox.policy.config.Scopes;
import dev.agentsandbox.store.IssuedToken;
import dev.agentsandbox.store.Store;
import java.io.IOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Optional;

/**
 * Creates the first admin token when the store holds no active token, and writes it to a file that
 * only its owner can read. The token itself never goes to a log or the console.
 */
public final class FirstAdminToken {
  /** The name of the token created on first start. */
  public static final String NAME = "admin";

  /** Who the first token's audit rows name. */
  static final String ACTOR = "control-plane";

  /** The file the token is written to, under the data directory. */
  public static final String FILE_NAME = "admin-token";

  private FirstAdminToken() {}

  /**
   * Creates the admin token if no active token exists.
   *
   * @return the file holding the new token, or empty when tokens already existed
   * @throws ServerException when the file cannot be written (the token is then revoked)
   */
  public static Optional<Path> ensure(Store store, Path dataDirectory) {
    if (store.tokens().countActive() > 0) {
      return Optional.empty();
    }
    IssuedToken token = store.tokens().create(NAME, Scopes.ALL, null, ACTOR);
    Path file = dataDirectory.resolve(FILE_NAME).toAbsolutePath();
    try {
      write(file, token.secret());
    } catch (IOException | UnsupportedOperationException e) {
      // A token nobody can read would only be a risk; take it back.
      store.tokens().revoke(NAME, ACTOR);
      throw new ServerException(
          "write the first admin token to "
              + file
              + ": "
              + e.getMessage()
              + " (make the data directory writable, or create a token with agent-sandbox token"
              + " create)",
          e);
    }
    return Optional.of(file);
  }

  private static void write(Path file, String secret) throws IOException {
    Files.createDirectories(
        file.getParent(),
        PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
    // Created 0600 from the start (never briefly readable), then moved over any old file.
    Path temp =
        Files.createTempFile(
            file.getParent(),
            ".admin-token",
            ".tmp",
            PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
    try {
      try (Writer out =
          Files.newBufferedWriter(temp, StandardCharsets.UTF_8, StandardOpenOption.WRITE)) {
        out.write(secret);
        out.write('\n');
      }
      Files.move(temp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    } catch (FileAlreadyExistsException e) {
      throw new IOException("file exists and could not be replaced", e);
    } finally {
      Files.deleteIfExists(temp);
    }
  }
}
