package dev.agentsandbox.backend.docker;

import java.util.Objects;

/**
 * Files copied into a sandbox before its workload starts (its credentials, its empty output folder;
 * any file a later feature hands the workload, such as a CA certificate, is one more), as a tar the
 * daemon extracts at {@code path} of a container ({@code PUT /containers/{id}/archive}). The
 * workload's own mounts of the run's volumes are read-only where it must not write, so what goes
 * there is copied through the proxy's writable mount of the same volume.
 *
 * @param through the container the daemon extracts into
 * @param path where, inside that container
 * @param tar the archive: plain files and folders with their owner and mode
 * @param step the launch step's name, for its message ({@code copying the run's credentials ...})
 */
record Delivery(Through through, String path, byte[] tar, String step) {
  /** Which container of the sandbox the archive is extracted into. */
  enum Through {
    /** The proxy, into its writable mount of one of the run's volumes. */
    PROXY,
    /** The workload container, created and not yet started. */
    WORKLOAD
  }

  Delivery {
    Objects.requireNonNull(through, "through");
    Objects.requireNonNull(path, "path");
    tar = tar.clone();
    Objects.requireNonNull(step, "step");
  }

  @Override
  public byte[] tar() {
    return tar.clone();
  }
}
