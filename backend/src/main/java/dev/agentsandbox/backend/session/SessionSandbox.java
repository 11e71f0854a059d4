package dev.agentsandbox.backend.session;

import dev.agentsandbox.backend.Sandbox;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.List;

/**
 * A launched sandbox whose workload is idle until it is given steps and files: a session's
 * (docs/api.md, "Sessions"). It is a {@link Sandbox} in every other way: its {@link
 * #await(java.time.Instant)} returns when it is {@link #kill() killed} (the session closed or went
 * idle), when the deadline passes, or when the backend fails (its proxy died, its workload
 * container or VM stopped); its {@link #outputs()} and {@link #teardown()} are a run's.
 *
 * <p>Every operation here acts inside the session's own sandbox and nowhere else: a step runs as
 * the workload's user under the sandbox's isolation and fence; a path is resolved inside the
 * sandbox, beneath {@code /workspace}, never following a symbolic link, and never by the host
 * (docs/architecture.md invariant 11). What the sandbox sends back is read as hostile: bounded,
 * never trusted to name a path on the host.
 *
 * <p>Thread-safety: every method may be called from any thread, several steps and file operations
 * at once; one step's output never holds up another's. After {@link #kill()} or {@link #teardown()}
 * every method throws {@link UnableToRunStepException}.
 */
public interface SessionSandbox extends Sandbox {
  /**
   * Starts a step and returns at once; its output goes to {@code listener} until it ends.
   *
   * @throws PathRefusedException when its {@code cwd} is not a folder reached without a link
   * @throws UnableToRunStepException when it could not be started
   */
  Step exec(StepSpec step, StepListener listener);

  /**
   * Writes {@code content} as the regular file at {@code path} (mode 0644, owned by the workload's
   * user), replacing a regular file there and creating missing parent folders; the file appears
   * whole or not at all (written beside it, then renamed over it).
   *
   * @param maxBytes the most bytes accepted: reading stops one byte past it and nothing is written
   * @return the bytes written
   * @throws PathRefusedException when a segment is a link, a folder is where the file goes, or the
   *     content is over {@code maxBytes}
   */
  long putFile(WorkspacePath path, InputStream content, long maxBytes);

  /**
   * Extracts a tar archive under the folder {@code folder} (created when missing). The run service
   * has already checked every entry (regular files and folders only, relative names, no {@code ..},
   * within the caps) and passes the checked archive; the backend still never follows a link while
   * writing it.
   *
   * @param maxBytes the most bytes of archive read
   */
  ArchiveWritten putArchive(WorkspacePath folder, InputStream tar, long maxBytes);

  /**
   * What is at {@code path}, read without following a link.
   *
   * @throws PathRefusedException with {@link PathRefusedException.Reason#NOT_FOUND} when nothing is
   *     there, or {@code SYMLINK} when a folder on the way is a link
   */
  PathInfo stat(WorkspacePath path);

  /**
   * The entries of the folder at {@code path}, at most {@code max} of them, in name order; links
   * are listed as links, never followed.
   */
  List<PathInfo> list(WorkspacePath folder, int max);

  /**
   * Copies the regular file at {@code path} to {@code out}.
   *
   * @throws PathRefusedException when it is not a regular file reached without a link, or is over
   *     {@code maxBytes} (checked before the first byte is sent)
   */
  void readFile(WorkspacePath path, OutputStream out, long maxBytes);

  /**
   * Writes a tar archive of the folder at {@code path} to {@code out}: its regular files and
   * folders, names relative to it; links and special files are left out. Refused before the first
   * byte when its files add up to more than {@code maxBytes}.
   *
   * @return the paths left out, relative to the folder (at most 1,000)
   */
  List<String> readFolder(WorkspacePath path, OutputStream out, long maxBytes);
}
