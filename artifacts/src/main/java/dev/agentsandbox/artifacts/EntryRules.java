package dev.agentsandbox.artifacts;

import dev.agentsandbox.artifacts.CollectedOutputs.Reason;
import dev.agentsandbox.policy.text.Bounded;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarConstants;

/**
 * The rules an entry of a hostile tar archive is judged by, whichever way it crosses: a sandbox's
 * outputs coming out ({@link OutputCollector}) and a client's archive going into a session ({@link
 * InboundArchive}). Pure.
 */
final class EntryRules {
  private EntryRules() {}

  /** Why a non-folder entry is not a plain regular file, or null when it is one. */
  static Reason typeRefusal(TarArchiveEntry entry) {
    if (entry.isSymbolicLink()) {
      return Reason.SYMLINK;
    }
    if (entry.isLink()) {
      return Reason.HARDLINK;
    }
    if (entry.isCharacterDevice() || entry.isBlockDevice()) {
      return Reason.DEVICE;
    }
    if (entry.isFIFO()) {
      return Reason.FIFO;
    }
    // Only plain files: isFile() alone also answers true for sparse, contiguous and vendor types.
    byte flag = entry.getLinkFlag();
    boolean plain = flag == TarConstants.LF_NORMAL || flag == TarConstants.LF_OLDNORM;
    if (!plain || entry.isSparse()) {
      return Reason.UNSUPPORTED;
    }
    return null;
  }

  /** Whether a kept file's folder on the way to {@code path} is itself a kept file. */
  static boolean parentIsFile(String path, java.util.Set<String> files) {
    for (int slash = path.indexOf('/'); slash > 0; slash = path.indexOf('/', slash + 1)) {
      if (files.contains(path.substring(0, slash))) {
        return true;
      }
    }
    return false;
  }

  /**
   * A name as it may be shown in a message or a row: bounded, and as a reviewer can read it (no
   * character that would reorder or hide the list).
   */
  static String shown(String path) {
    return Bounded.within(path, 200, Bounded.Escape.NAME);
  }
}
