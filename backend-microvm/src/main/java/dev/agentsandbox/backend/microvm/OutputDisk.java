package dev.agentsandbox.backend.microvm;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Optional;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.apache.commons.compress.archivers.tar.TarConstants;

/**
 * The VM's output disk: a raw block device on which the guest's init writes {@code /workspace/out}
 * as a tar archive (busybox {@code tar -c}) once the workload has stopped. The guest controls every
 * byte of it, so it is read as hostile: only the plain ustar headers busybox writes (with GNU long
 * names) are understood, each header's checksum must match, no size may reach past the disk's end,
 * names and link targets are bounded, at most {@value #MAX_ENTRIES} entries are read, and nothing
 * is ever followed or extracted. What was read is written out again as a fresh tar archive, so the
 * reader downstream ({@code OutputCollector}, which refuses links, devices and escaping names)
 * never sees a pax header, a sparse entry or any other construct the guest wrote.
 *
 * <p>Reading stops at the first damaged or truncated record (a guest killed while writing, a disk
 * that filled up, or a hostile guest); the entries before it are kept and the reason is returned.
 * Not thread-safe.
 */
final class OutputDisk {
  /** One more than {@code OutputCollector} reads, so that it can name what is over its cap. */
  static final int MAX_ENTRIES = 100_001;

  /** The longest name or link target a GNU long-name record may carry, in bytes. */
  static final int MAX_NAME_BYTES = 4096;

  private static final int RECORD = 512;

  private OutputDisk() {}

  /**
   * One archive entry as read off the disk.
   *
   * @param name the entry's name as written, never resolved
   * @param type the tar type flag ({@code '0'} file, {@code '5'} folder, {@code '2'} symlink ...)
   * @param contentOffset where a file's content starts on the disk
   * @param size a file's content length (0 for everything else)
   * @param link a link's target, empty otherwise
   * @param mode the permission bits
   * @param mtime seconds since the epoch
   * @param devMajor a device's major number
   * @param devMinor a device's minor number
   */
  record Entry(
      String name,
      byte type,
      long contentOffset,
      long size,
      String link,
      int mode,
      long mtime,
      int devMajor,
      int devMinor) {}

  /**
   * What the disk held.
   *
   * @param entries the entries, in disk order
   * @param stopped why reading stopped before a proper end of archive, if it did
   */
  record Listing(List<Entry> entries, Optional<String> stopped) {}

  /** Reads every header on {@code disk}; content is only located, never read. */
  static Listing list(FileChannel disk) throws IOException {
    return list(disk, MAX_ENTRIES, Long.MAX_VALUE);
  }

  /**
   * Reads the headers in the first {@code maxBytes} of {@code disk}, at most {@code maxEntries}:
   * the size the backend gave the disk, whatever size the file has grown to since.
   */
  static Listing list(FileChannel disk, int maxEntries, long maxBytes) throws IOException {
    long end = Math.min(disk.size(), maxBytes);
    List<Entry> entries = new ArrayList<>();
    ByteBuffer header = ByteBuffer.allocate(RECORD);
    String longName = null;
    String longLink = null;
    long position = 0;
    while (true) {
      if (position + RECORD > end) {
        return stopped(entries, "the disk ends at " + end + " without an end-of-archive record");
      }
      header.clear();
      readFully(disk, header, position);
      byte[] block = header.array();
      if (allZero(block)) {
        return new Listing(List.copyOf(entries), Optional.empty());
      }
      if (entries.size() >= maxEntries) {
        return stopped(entries, "more than " + maxEntries + " entries");
      }
      long checksum = octal(block, 148, 8);
      if (checksum < 0 || checksum != checksum(block)) {
        return stopped(entries, "no valid tar header at offset " + position);
      }
      long size = octal(block, 124, 12);
      if (size < 0) {
        return stopped(entries, "an unreadable size at offset " + position);
      }
      long contentOffset = position + RECORD;
      long padded = (size + RECORD - 1) / RECORD * RECORD;
      if (size > end - contentOffset || padded > end - contentOffset) {
        return stopped(
            entries,
            "an entry at offset "
                + position
                + " reaches past the disk's end as read (its size, at most the run's output cap plus headers)");
      }
      byte type = block[156];
      position = contentOffset + padded;
      if (type == TarConstants.LF_GNUTYPE_LONGNAME || type == TarConstants.LF_GNUTYPE_LONGLINK) {
        if (size > MAX_NAME_BYTES + 1) {
          return stopped(entries, "a long name of " + size + " bytes at offset " + contentOffset);
        }
        ByteBuffer content = ByteBuffer.allocate((int) size);
        readFully(disk, content, contentOffset);
        String value = string(content.array(), 0, (int) size);
        if (type == TarConstants.LF_GNUTYPE_LONGNAME) {
          longName = value;
        } else {
          longLink = value;
        }
        continue;
      }
      String name = longName != null ? longName : name(block);
      String link = longLink != null ? longLink : string(block, 157, 100);
      longName = null;
      longLink = null;
      if (!known(type)) {
        // Pax headers, sparse files, volume labels ...: busybox writes none of these.
        continue;
      }
      boolean file = type == TarConstants.LF_NORMAL || type == TarConstants.LF_OLDNORM;
      long mode = octal(block, 100, 8);
      long mtime = octal(block, 136, 12);
      long major = octal(block, 329, 8);
      long minor = octal(block, 337, 8);
      entries.add(
          new Entry(
              name,
              type == TarConstants.LF_OLDNORM ? TarConstants.LF_NORMAL : type,
              contentOffset,
              file ? size : 0,
              file || type == TarConstants.LF_DIR ? "" : link,
              mode < 0 ? 0 : (int) (mode & 07777),
              Math.max(0, mtime),
              major < 0 ? 0 : (int) major,
              minor < 0 ? 0 : (int) minor));
    }
  }

  /**
   * The entries as a fresh tar archive, content copied from {@code disk} as it is read. Closing the
   * stream closes {@code disk}.
   */
  static InputStream archive(FileChannel disk, List<Entry> entries) {
    return new Archive(disk, entries.iterator(), Optional.empty());
  }

  /**
   * {@link #archive(FileChannel, List)} of a listing: when reading the disk stopped early, the
   * archive does not end after the entries read but fails with the reason, so that its reader names
   * what was not read rather than taking the archive for whole.
   */
  static InputStream archive(FileChannel disk, Listing listing) {
    return new Archive(disk, listing.entries().iterator(), listing.stopped());
  }

  private static Listing stopped(List<Entry> entries, String why) {
    return new Listing(List.copyOf(entries), Optional.of(why));
  }

  private static boolean known(byte type) {
    return switch (type) {
      case TarConstants.LF_NORMAL,
          TarConstants.LF_OLDNORM,
          TarConstants.LF_DIR,
          TarConstants.LF_SYMLINK,
          TarConstants.LF_LINK,
          TarConstants.LF_CHR,
          TarConstants.LF_BLK,
          TarConstants.LF_FIFO ->
          true;
      default -> false;
    };
  }

  /** The name field, with the ustar prefix when the header is POSIX ustar (busybox writes GNU). */
  private static String name(byte[] block) {
    String name = string(block, 0, 100);
    boolean posix =
        block[257] == 'u'
            && block[258] == 's'
            && block[259] == 't'
            && block[260] == 'a'
            && block[261] == 'r'
            && block[262] == 0;
    String prefix = posix ? string(block, 345, 155) : "";
    return prefix.isEmpty() ? name : prefix + "/" + name;
  }

  /** Bytes up to the first NUL (or the field's end) as UTF-8. */
  private static String string(byte[] bytes, int offset, int length) {
    int end = offset;
    while (end < offset + length && bytes[end] != 0) {
      end++;
    }
    return new String(bytes, offset, end - offset, StandardCharsets.UTF_8);
  }

  /**
   * An octal number field: leading spaces, octal digits, then NUL or spaces only. Returns -1 for
   * anything else, including the base-256 form (which no size on a disk this small needs).
   */
  static long octal(byte[] block, int offset, int length) {
    int i = offset;
    int end = offset + length;
    while (i < end && block[i] == ' ') {
      i++;
    }
    long value = 0;
    int digits = 0;
    while (i < end && block[i] >= '0' && block[i] <= '7') {
      value = value * 8 + (block[i] - '0');
      if (++digits > 12) {
        return -1;
      }
      i++;
    }
    for (; i < end; i++) {
      if (block[i] != 0 && block[i] != ' ') {
        return -1;
      }
    }
    return digits == 0 ? 0 : value;
  }

  /** The header's checksum: its bytes summed unsigned, the checksum field counted as spaces. */
  static long checksum(byte[] block) {
    long sum = 0;
    for (int i = 0; i < RECORD; i++) {
      sum += (i >= 148 && i < 156) ? ' ' : (block[i] & 0xff);
    }
    return sum;
  }

  private static boolean allZero(byte[] block) {
    for (byte b : block) {
      if (b != 0) {
        return false;
      }
    }
    return true;
  }

  private static void readFully(FileChannel disk, ByteBuffer buffer, long position)
      throws IOException {
    while (buffer.hasRemaining()) {
      int read = disk.read(buffer, position + buffer.position());
      if (read < 0) {
        throw new IOException("the output disk ended at " + (position + buffer.position()));
      }
    }
  }

  /** A tar archive written record by record as its reader asks for more. */
  private static final class Archive extends InputStream {
    private static final int CHUNK = 64 * 1024;
    private final FileChannel disk;
    private final Iterator<Entry> entries;
    private final Optional<String> stopped;
    private final ByteArrayOutputStream sink = new ByteArrayOutputStream();
    private final TarArchiveOutputStream tar;
    private byte[] pending = new byte[0];
    private int pendingAt;
    private Entry current;
    private long copied;
    private boolean done;

    Archive(FileChannel disk, Iterator<Entry> entries, Optional<String> stopped) {
      this.disk = disk;
      this.entries = entries;
      this.stopped = stopped;
      this.tar = new TarArchiveOutputStream(sink, RECORD, StandardCharsets.UTF_8.name());
      tar.setLongFileMode(TarArchiveOutputStream.LONGFILE_GNU);
      tar.setBigNumberMode(TarArchiveOutputStream.BIGNUMBER_POSIX);
    }

    @Override
    public int read() throws IOException {
      byte[] one = new byte[1];
      int read = read(one, 0, 1);
      return read < 0 ? -1 : one[0] & 0xff;
    }

    @Override
    public int read(byte[] buffer, int offset, int length) throws IOException {
      if (length == 0) {
        return 0;
      }
      while (pendingAt >= pending.length) {
        if (done) {
          return -1;
        }
        step();
        pending = sink.toByteArray();
        pendingAt = 0;
        sink.reset();
      }
      int count = Math.min(length, pending.length - pendingAt);
      System.arraycopy(pending, pendingAt, buffer, offset, count);
      pendingAt += count;
      return count;
    }

    private void step() throws IOException {
      if (current != null && copied < current.size()) {
        int want = (int) Math.min(CHUNK, current.size() - copied);
        ByteBuffer chunk = ByteBuffer.allocate(want);
        readFully(disk, chunk, current.contentOffset() + copied);
        tar.write(chunk.array(), 0, want);
        copied += want;
      } else if (current != null) {
        tar.closeArchiveEntry();
        current = null;
      } else if (entries.hasNext()) {
        current = entries.next();
        copied = 0;
        tar.putArchiveEntry(tarEntry(current));
      } else if (stopped.isPresent()) {
        done = true;
        throw new IOException("reading the output disk stopped early: " + stopped.get());
      } else {
        tar.finish();
        done = true;
      }
    }

    private static TarArchiveEntry tarEntry(Entry entry) {
      // Names are kept exactly as written (preserveAbsolutePath): the collector judges them.
      TarArchiveEntry tar = new TarArchiveEntry(entry.name(), entry.type(), true);
      int typeBits =
          switch (entry.type()) {
            case TarConstants.LF_DIR -> 040000;
            case TarConstants.LF_SYMLINK -> 0120000;
            case TarConstants.LF_CHR -> 020000;
            case TarConstants.LF_BLK -> 060000;
            case TarConstants.LF_FIFO -> 010000;
            default -> 0100000;
          };
      tar.setMode(typeBits | entry.mode());
      tar.setModTime(entry.mtime() * 1000);
      tar.setSize(entry.size());
      if (!entry.link().isEmpty()) {
        tar.setLinkName(entry.link());
      }
      if (entry.type() == TarConstants.LF_CHR || entry.type() == TarConstants.LF_BLK) {
        tar.setDevMajor(Math.min(entry.devMajor(), 07777777));
        tar.setDevMinor(Math.min(entry.devMinor(), 07777777));
      }
      return tar;
    }

    @Override
    public void close() throws IOException {
      done = true;
      disk.close();
    }
  }
}
