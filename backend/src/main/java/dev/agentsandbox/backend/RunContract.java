package dev.agentsandbox.backend;

/**
 * What a workload can count on inside every backend's sandbox, besides its command and the proxy
 * variables: its credentials as files, a writable workspace, and an output folder collected for
 * review when the run ends. Each backend documents how it provides these (docs/runs.md).
 */
public final class RunContract {
  /** Where the run's credentials are, one read-only file each, on a tmpfs. */
  public static final String CREDENTIALS_DIR = "/run/agent-sandbox/credentials";

  /** The workload's writable working folder. */
  public static final String WORKSPACE = "/workspace";

  /** The folder whose files are collected into artifact storage when the run ends. */
  public static final String OUT_DIR = "/workspace/out";

  /** The variable that names {@link #OUT_DIR} to the workload. */
  public static final String OUT_ENV = "AGENT_SANDBOX_OUT";

  /** The variable that names {@link #CREDENTIALS_DIR} to the workload. */
  public static final String CREDENTIALS_ENV = "AGENT_SANDBOX_CREDENTIALS";

  /**
   * The variable that holds the run's id, so that a workload can call its own endpoints (read its
   * status with its {@code run-token} credential) and name its run in what it reports.
   */
  public static final String RUN_ID_ENV = "AGENT_SANDBOX_RUN_ID";

  /** The top folder name of the archive {@link Sandbox#outputs()} returns. */
  public static final String OUT_ARCHIVE_FOLDER = "out";

  private RunContract() {}

  /** Room beyond the files' own bytes in an archive of {@link #OUT_DIR}: folders, the end. */
  public static final long OUT_ARCHIVE_BASE_OVERHEAD = 1L << 20;

  /**
   * Room per file the run service may keep: its header, a pax header and its record (long names),
   * and the padding of its last record.
   */
  public static final long OUT_ARCHIVE_PER_FILE_OVERHEAD = 4 * 512;

  /**
   * The most bytes of an archive of {@link #OUT_DIR} a backend reads for a run with {@code caps}:
   * everything the run service may keep, plus room for tar headers. The archive is the workload's,
   * and its size is not the workspace's (a sparse file of any apparent size fits in a small one),
   * so no backend reads or stages more than this; an archive cut here is handed on as read, its
   * reader told where it stops.
   */
  public static long outArchiveLimit(dev.agentsandbox.policy.config.OutputLimits caps) {
    return caps.maxBytes()
        + OUT_ARCHIVE_BASE_OVERHEAD
        + (caps.maxFiles() + 1L) * OUT_ARCHIVE_PER_FILE_OVERHEAD;
  }
}
