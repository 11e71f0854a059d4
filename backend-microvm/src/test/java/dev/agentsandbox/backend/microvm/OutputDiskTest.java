package dev.agentsandbox.backend.microvm;

import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.artifacts.CollectedOutputs;
import dev.agentsandbox.artifacts.FolderArtifactStore;
import dev.agentsandbox.artifacts.OutputCaps;
import dev.agentsandbox.artifacts.OutputCollector;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The output disk as a hostile guest could write it: each row is a disk image, and what must come
 * out of it. Headers are built byte by byte here, so the disk can say anything a guest could.
 */
class OutputDiskTest {
  @TempDir Path dir;

  /** One entry as the test writes it: name, type, declared size, content, link target. */
  static final class Raw {
    final String name;
    final char type;
    final long declaredSize;
    final byte[] content;
    final String link;

    Raw(String name, char type, long declaredSize, byte[] content, String link) {
      this.name = name;
      this.type = type;
      this.declaredSize = declaredSize;
      this.content = content.clone();
      this.link = link;
    }

    static Raw folder(String name) {
      return new Raw(name, '5', 0, new byte[0], "");
    }

    static Raw file(String name, String content) {
      byte[] bytes = content.getBytes(StandardCharsets.UTF_8);
      return new Raw(name, '0', bytes.length, bytes, "");
    }

    static Raw link(String name, char type, String target) {
      return new Raw(name, type, 0, new byte[0], target);
    }
  }

  @Test
  void whatBusyboxWritesComesOutAsTheSameEntriesWithTheSameContent() throws IOException {
    String longName = "out/" + "d".repeat(120) + "/result.json";
    Path disk =
        disk(
            List.of(
                Raw.folder("out/"),
                Raw.file("out/result.json", "{\"ok\":true}\n"),
                Raw.link("out/link", '2', "result.json"),
                Raw.file(longName, "deep")),
            4096);
    Map<String, String> out = read(disk);
    assertThat(out)
        .containsExactly(
            Map.entry("out/", "dir"),
            Map.entry("out/result.json", "file {\"ok\":true}\n"),
            Map.entry("out/link", "symlink -> result.json"),
            Map.entry(longName, "file deep"));
  }

  @Test
  void theCollectorKeepsOnlyThePlainFilesAndNamesWhatItRefused() throws IOException {
    Path disk =
        disk(
            List.of(
                Raw.folder("out/"),
                Raw.file("out/result.json", "{\"ok\":true}\n"),
                Raw.link("out/link", '2', "/etc/shadow"),
                Raw.link("out/hard", '1', "out/result.json"),
                new Raw("out/tty", '3', 0, new byte[0], ""),
                new Raw("out/disk", '4', 0, new byte[0], ""),
                new Raw("out/pipe", '6', 0, new byte[0], ""),
                Raw.file("../../etc/cron.d/evil", "x"),
                Raw.file("/etc/passwd", "x"),
                Raw.file("out/../../escape", "x")),
            4096);
    CollectedOutputs collected;
    try (FileChannel channel = FileChannel.open(disk);
        InputStream archive = OutputDisk.archive(channel, OutputDisk.list(channel).entries())) {
      collected =
          new OutputCollector(new FolderArtifactStore(dir.resolve("store")), dir.resolve("spool"))
              .collect("run1", archive, "out", new OutputCaps(1 << 20, 100));
    }
    assertThat(collected.kept()).extracting(a -> a.path()).containsExactly("result.json");
    assertThat(collected.dropped())
        .extracting(d -> d.path() + " " + d.reason())
        .containsExactlyInAnyOrder(
            "link SYMLINK",
            "hard HARDLINK",
            "tty DEVICE",
            "disk DEVICE",
            "pipe FIFO",
            "../../etc/cron.d/evil INVALID_PATH",
            "/etc/passwd INVALID_PATH",
            "../../escape INVALID_PATH");
    try (Stream<Path> files = Files.walk(dir)) {
      assertThat(files.map(dir::relativize).map(Path::toString))
          .as("nothing was written outside the store")
          .allMatch(
              p -> p.isEmpty() || p.startsWith("store") || p.equals("spool") || p.equals("disk"));
    }
  }

  static Stream<Arguments> hostileDisks() {
    byte[] base256Size = header("out/big", '0', 0, "");
    // The base-256 form: high bit set, then a big-endian number (here 2^62 bytes).
    Arrays.fill(base256Size, 124, 136, (byte) 0);
    base256Size[124] = (byte) 0x80;
    base256Size[128] = 0x40;
    sign(base256Size);
    byte[] badChecksum = header("out/forged", '0', 0, "");
    badChecksum[0] = 'X';
    byte[] paxEscape = header("././@PaxHeader", 'x', 30, "");
    byte[] pax = padded("30 path=../../../etc/shadow\n".getBytes(StandardCharsets.UTF_8));
    byte[] hugeLongName = header("././@LongLink", 'L', OutputDisk.MAX_NAME_BYTES + 2, "");
    return Stream.of(
        Arguments.of(
            "a size far past the disk's end stops reading; what came before is kept",
            concat(
                entry(Raw.file("out/first", "1")),
                header("out/huge", '0', 077777777777L, ""),
                new byte[1024]),
            List.of("out/first"),
            "reaches past the disk's end"),
        Arguments.of(
            "a size in base-256 is refused",
            concat(entry(Raw.file("out/first", "1")), base256Size, new byte[1024]),
            List.of("out/first"),
            "unreadable size"),
        Arguments.of(
            "a header whose checksum does not match is not a header",
            concat(entry(Raw.file("out/first", "1")), badChecksum, new byte[1024]),
            List.of("out/first"),
            "no valid tar header"),
        Arguments.of(
            "a pax header is skipped, so it cannot rename the next entry",
            concat(paxEscape, pax, entry(Raw.file("out/plain", "p")), new byte[1024]),
            List.of("out/plain"),
            null),
        Arguments.of(
            "a long name longer than any path is refused",
            concat(
                entry(Raw.file("out/first", "1")),
                hugeLongName,
                padded(new byte[OutputDisk.MAX_NAME_BYTES + 2]),
                new byte[1024]),
            List.of("out/first"),
            "a long name of"),
        Arguments.of(
            "symlink loops are entries like any other, never followed",
            concat(
                entry(Raw.link("out/a", '2', "b")),
                entry(Raw.link("out/b", '2', "a")),
                entry(Raw.link("out/self", '2', "self")),
                entry(Raw.link("out/up", '2', "../../../../")),
                new byte[1024]),
            List.of("out/a", "out/b", "out/self", "out/up"),
            null),
        Arguments.of(
            "a disk without an end-of-archive record ends the listing at the disk's end",
            entry(Raw.file("out/first", "1")),
            List.of("out/first"),
            "without an end-of-archive record"),
        Arguments.of(
            "content declared but cut by the disk's end is not kept",
            concat(entry(Raw.file("out/first", "1")), header("out/cut", '0', 2048, ""), pad(1024)),
            List.of("out/first"),
            "reaches past the disk's end"),
        Arguments.of(
            "an empty disk (the guest was killed before writing) has no entries",
            new byte[8192],
            List.of(),
            null));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("hostileDisks")
  void aHostileDiskIsReadOnlyAsFarAsItIsSound(
      String name, byte[] image, List<String> expected, String stoppedBecause) throws IOException {
    Path disk = dir.resolve("disk");
    Files.write(disk, image);
    try (FileChannel channel = FileChannel.open(disk)) {
      OutputDisk.Listing listing = OutputDisk.list(channel);
      assertThat(listing.entries()).extracting(OutputDisk.Entry::name).isEqualTo(expected);
      if (stoppedBecause == null) {
        assertThat(listing.stopped()).isEmpty();
      } else {
        assertThat(listing.stopped())
            .hasValueSatisfying(s -> assertThat(s).contains(stoppedBecause));
      }
      // What was kept is a sound archive whose symlinks are still symlinks.
      try (InputStream archive = OutputDisk.archive(channel, listing.entries());
          TarArchiveInputStream tar = new TarArchiveInputStream(archive)) {
        List<String> names = new ArrayList<>();
        for (TarArchiveEntry e = tar.getNextEntry(); e != null; e = tar.getNextEntry()) {
          names.add(e.getName());
          if (name.startsWith("symlink")) {
            assertThat(e.isSymbolicLink()).as(e.getName()).isTrue();
          }
        }
        assertThat(names).isEqualTo(expected);
      }
    }
  }

  @Test
  void aFileLargerThanTheRunCanKeepStopsTheReadingAtItsCapPlusHeaders() throws IOException {
    // Issue 26 item 2 on this backend: the guest archives a file larger than the run may keep (a
    // sparse one fills the output disk with zeros; the disk has the size the backend gave it).
    // Reading stops at the run's cap plus headers, not at the disk's end, and the collector keeps
    // what came before and says where it stopped.
    int big = 3 << 20;
    byte[] image =
        concat(
            entry(Raw.folder("out/")),
            entry(Raw.file("out/a.txt", "kept")),
            header("out/big", '0', big, ""),
            pad(big),
            pad(1024));
    Path disk = dir.resolve("disk");
    Files.write(disk, image);
    long limit =
        dev.agentsandbox.backend.RunContract.outArchiveLimit(
            new dev.agentsandbox.policy.config.OutputLimits(1 << 20, 10));
    CollectedOutputs collected;
    try (FileChannel channel = FileChannel.open(disk)) {
      OutputDisk.Listing listing = OutputDisk.list(channel, OutputDisk.MAX_ENTRIES, limit);
      assertThat(listing.entries())
          .extracting(OutputDisk.Entry::name)
          .containsExactly("out/", "out/a.txt");
      assertThat(listing.stopped())
          .hasValueSatisfying(why -> assertThat(why).contains("reaches past"));
      try (InputStream archive = OutputDisk.archive(channel, listing)) {
        collected =
            new OutputCollector(new FolderArtifactStore(dir.resolve("store")), dir.resolve("spool"))
                .collect("run1", archive, "out", new OutputCaps(1 << 20, 10));
      }
    }
    assertThat(collected.kept()).extracting(a -> a.path()).containsExactly("a.txt");
    assertThat(collected.dropped())
        .extracting(d -> d.path() + " " + d.reason())
        .singleElement()
        .satisfies(
            d ->
                assertThat(d)
                    .startsWith("(the rest of the archive: reading the output disk stopped early:")
                    .contains("reaches past")
                    .endsWith("TRUNCATED"));
  }

  @Test
  void readingStopsAtTheEntryCap() throws IOException {
    List<Raw> many = new ArrayList<>();
    for (int i = 0; i < 12; i++) {
      many.add(Raw.file("out/f" + i, ""));
    }
    Path disk = disk(many, 0);
    try (FileChannel channel = FileChannel.open(disk)) {
      OutputDisk.Listing listing = OutputDisk.list(channel, 10, Long.MAX_VALUE);
      assertThat(listing.entries()).hasSize(10);
      assertThat(listing.stopped()).hasValue("more than 10 entries");
      assertThat(OutputDisk.list(channel, 12, Long.MAX_VALUE).stopped()).isEmpty();
    }
  }

  @Test
  void aDiskGrownPastItsSizeIsReadOnlyUpToTheSizeItWasMade() throws IOException {
    Path disk =
        disk(List.of(Raw.file("out/first", "1"), Raw.file("out/grown", "beyond the size")), 0);
    try (FileChannel channel = FileChannel.open(disk)) {
      OutputDisk.Listing listing = OutputDisk.list(channel, 100, 1024);
      assertThat(listing.entries()).extracting(OutputDisk.Entry::name).containsExactly("out/first");
      assertThat(listing.stopped()).hasValueSatisfying(s -> assertThat(s).contains("disk ends"));
    }
  }

  @Test
  void aLargeFileIsCopiedInFullAndByteForByte() throws IOException {
    byte[] content = new byte[300_000];
    for (int i = 0; i < content.length; i++) {
      content[i] = (byte) (i * 31 + 7);
    }
    Path disk = disk(List.of(new Raw("out/blob", '0', content.length, content, "")), 1024);
    try (FileChannel channel = FileChannel.open(disk);
        InputStream archive = OutputDisk.archive(channel, OutputDisk.list(channel).entries());
        TarArchiveInputStream tar = new TarArchiveInputStream(archive)) {
      TarArchiveEntry entry = tar.getNextEntry();
      assertThat(entry.getSize()).isEqualTo(content.length);
      assertThat(tar.readAllBytes()).isEqualTo(content);
      assertThat(tar.getNextEntry()).isNull();
    }
  }

  @Test
  void anArchiveWrittenByCommonsCompressInGnuFormReadsBack() throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    String longLink = "t".repeat(150);
    try (TarArchiveOutputStream out = new TarArchiveOutputStream(bytes)) {
      out.setLongFileMode(TarArchiveOutputStream.LONGFILE_GNU);
      TarArchiveEntry link = new TarArchiveEntry("out/long-link", TarArchiveEntry.LF_SYMLINK);
      link.setLinkName(longLink);
      out.putArchiveEntry(link);
      out.closeArchiveEntry();
      out.finish();
    }
    Path disk = dir.resolve("disk");
    Files.write(disk, bytes.toByteArray());
    assertThat(read(disk)).containsExactly(Map.entry("out/long-link", "symlink -> " + longLink));
  }

  // --- building disks -------------------------------------------------------------------------

  private Path disk(List<Raw> entries, int trailingZeros) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    for (Raw raw : entries) {
      bytes.writeBytes(entry(raw));
    }
    bytes.writeBytes(new byte[1024 + trailingZeros]);
    Path disk = dir.resolve("disk");
    Files.write(disk, bytes.toByteArray());
    return disk;
  }

  private static Map<String, String> read(Path disk) throws IOException {
    Map<String, String> seen = new LinkedHashMap<>();
    try (FileChannel channel = FileChannel.open(disk, StandardOpenOption.READ)) {
      OutputDisk.Listing listing = OutputDisk.list(channel);
      assertThat(listing.stopped()).isEmpty();
      try (InputStream archive = OutputDisk.archive(channel, listing.entries());
          TarArchiveInputStream tar = new TarArchiveInputStream(archive)) {
        for (TarArchiveEntry e = tar.getNextEntry(); e != null; e = tar.getNextEntry()) {
          String what =
              e.isDirectory()
                  ? "dir"
                  : e.isSymbolicLink()
                      ? "symlink -> " + e.getLinkName()
                      : "file " + new String(tar.readAllBytes(), StandardCharsets.UTF_8);
          seen.put(e.getName(), what);
        }
      }
    }
    return seen;
  }

  /** An entry as busybox writes it: a GNU long-name record first when the name is long. */
  private static byte[] entry(Raw raw) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    byte[] name = raw.name.getBytes(StandardCharsets.UTF_8);
    if (name.length > 99) {
      byte[] longName = Arrays.copyOf(name, name.length + 1);
      out.writeBytes(header("././@LongLink", 'L', longName.length, ""));
      out.writeBytes(padded(longName));
    }
    out.writeBytes(header(raw.name, raw.type, raw.declaredSize, raw.link));
    out.writeBytes(padded(raw.content));
    return out.toByteArray();
  }

  /** A GNU-magic header (as busybox writes), its checksum correct. */
  static byte[] header(String name, char type, long size, String link) {
    byte[] block = new byte[512];
    put(block, 0, 100, name.getBytes(StandardCharsets.UTF_8));
    put(block, 100, 8, String.format("%07o", 0644).getBytes(StandardCharsets.US_ASCII));
    put(block, 108, 8, "0000000".getBytes(StandardCharsets.US_ASCII));
    put(block, 116, 8, "0000000".getBytes(StandardCharsets.US_ASCII));
    put(block, 124, 12, String.format("%011o", size).getBytes(StandardCharsets.US_ASCII));
    put(block, 136, 12, String.format("%011o", 1_700_000_000L).getBytes(StandardCharsets.US_ASCII));
    block[156] = (byte) type;
    put(block, 157, 100, link.getBytes(StandardCharsets.UTF_8));
    put(block, 257, 8, "ustar  \0".getBytes(StandardCharsets.US_ASCII));
    sign(block);
    return block;
  }

  private static void sign(byte[] block) {
    Arrays.fill(block, 148, 156, (byte) ' ');
    put(
        block,
        148,
        8,
        String.format("%06o\0 ", OutputDisk.checksum(block)).getBytes(StandardCharsets.US_ASCII));
  }

  private static void put(byte[] block, int offset, int length, byte[] value) {
    System.arraycopy(value, 0, block, offset, Math.min(length, value.length));
  }

  private static byte[] padded(byte[] content) {
    return Arrays.copyOf(content, (content.length + 511) / 512 * 512);
  }

  private static byte[] pad(int length) {
    return new byte[length];
  }

  private static byte[] concat(byte[]... parts) {
    ByteBuffer all = ByteBuffer.allocate(Stream.of(parts).mapToInt(p -> p.length).sum());
    for (byte[] part : parts) {
      all.put(part);
    }
    return all.array();
  }
}
