package dev.agentsandbox.backend;

import java.time.Instant;

/**
 * One launched sandbox: the handle through which a run is awaited, killed and torn down.
 *
 * <p>Thread-safety: {@link #kill()} and {@link #teardown()} may be called from any thread while
 * another thread is in {@link #await}; both are idempotent. {@link #close()} is {@link
 * #teardown()}, so try-with-resources never leaves anything behind.
 */
public interface Sandbox extends AutoCloseable {
  /** The run this sandbox belongs to. */
  String runId();

  /** The runtime the workload actually runs under ({@code runsc}, {@code runc}, ...). */
  String runtime();

  /**
   * The content-addressed id of the image the workload was created from ({@code sha256:...}), as
   * the backend resolved it at launch: what ran, whatever the image's name points at later.
   *
   * @return empty when this backend cannot name it
   */
  default java.util.Optional<String> imageId() {
    return java.util.Optional.empty();
  }

  /**
   * The id of the pre-started proxy (a backend's proxy-pool standby) this sandbox was built on, for
   * the run's audit rows.
   *
   * @return empty when the sandbox's proxy was started for it
   */
  default java.util.Optional<String> pooledProxy() {
    return java.util.Optional.empty();
  }

  /**
   * Waits until the workload ends or the deadline passes, killing it at the deadline. Output and
   * egress decisions reach the launch's {@link SandboxListener} before this returns.
   *
   * @param deadline when to stop waiting and kill the workload
   * @return how the workload ended
   * @throws InterruptedException when the waiting thread is interrupted; the workload keeps running
   *     until {@link #kill()} or {@link #teardown()}
   */
  Completion await(Instant deadline) throws InterruptedException;

  /**
   * The workload's output folder ({@link RunContract#OUT_DIR}) as a tar archive whose top folder is
   * {@link RunContract#OUT_ARCHIVE_FOLDER}, read after the workload stopped and before {@link
   * #teardown()}; the caller closes it. The content is the workload's and is read as hostile.
   *
   * @return empty when this backend does not collect outputs (the run's artifacts row says so)
   * @throws SandboxException when the backend collects outputs but could not read them
   */
  default java.util.Optional<java.io.InputStream> outputs() {
    return java.util.Optional.empty();
  }

  /** Stops the workload now; {@link #await} then returns {@link Completion.End#KILLED}. */
  void kill();

  /** Deletes everything this sandbox created. Idempotent; safe after a partial launch. */
  void teardown();

  @Override
  default void close() {
    teardown();
  }
}
