package dev.agentsandbox.artifacts;

import java.io.InputStream;
import java.nio.file.Path;
import java.util.List;

/**
 * Where runs' outputs are kept for review, by run id and {@link ArtifactPath path}.
 *
 * <p>Implementations are thread-safe. Every method validates its path with {@link ArtifactPath} and
 * its run id as the run service issues them (lower-case letters and digits), so no name can reach
 * outside the run's own space.
 */
public interface ArtifactStore {
  /** Where the store keeps things, for operators: {@code folder /var/lib/...}, {@code s3://b/p}. */
  String describe();

  /**
   * Keeps {@code content} as the run's artifact {@code path}.
   *
   * @param sha256 the content's SHA-256 as computed by the caller while reading it from the sandbox
   * @throws UnableToStoreArtifactException when the store fails
   */
  StoredArtifact put(String runId, String path, Path content, String sha256);

  /** The run's artifacts in path order; empty when it has none (or is unknown). */
  List<StoredArtifact> list(String runId);

  /**
   * Opens one artifact for reading; the caller closes the stream.
   *
   * @throws ArtifactNotFoundException when the run has no such artifact
   */
  InputStream open(String runId, String path);

  /** Deletes every artifact of the run (retention); a run without artifacts is no error. */
  void deleteRun(String runId);

  /**
   * The ids of the runs this store holds artifacts of, in no particular order, for retention.
   * Entries this store did not write (names that are not run ids) are left out.
   */
  List<String> runIds();

  /** Checks that a run id is one the run service could have issued. */
  static String requireRunId(String runId) {
    if (runId == null || !runId.matches("[a-z0-9]{1,32}")) {
      throw new IllegalArgumentException("run id must be 1-32 lower-case letters or digits");
    }
    return runId;
  }
}
