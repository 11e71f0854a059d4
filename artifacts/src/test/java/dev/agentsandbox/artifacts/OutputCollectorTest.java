package dev.agentsandbox.artifacts;

import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.artifacts.CollectedOutputs.Dropped;
import dev.agentsandbox.artifacts.CollectedOutputs.Reason;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.apache.commons.compress.archivers.tar.TarConstants;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** The collector reads a workload's archive as hostile: each row tries one way around a rule. */
class OutputCollectorTest {
  private static final OutputCaps ROOMY = new OutputCaps(1 << 20, 100);

  @TempDir Path dir;

  private FolderArtifactStore store() {
    return new FolderArtifactStore(dir.resolve("store"));
  }

  private CollectedOutputs collect(byte[] tar, OutputCaps caps) throws IOException {
    return new OutputCollector(store(), dir.resolve("spool"))
        .collect("run1", new ByteArrayInputStream(tar), "out", caps);
  }

  interface TarBuilder {
    Tars build(Tars t) throws IOException;
  }

  static Stream<Arguments> hostileEntries() {
    return Stream.of(
        Arguments.of(
            "a symlink to the control plane's secrets is named, never followed",
            (TarBuilder) t -> t.symlink("out/secrets", "/var/lib/agent-sandbox/admin-token"),
            "secrets",
            Reason.SYMLINK),
        Arguments.of(
            "a symlink folder to escape through",
            (TarBuilder) t -> t.symlink("out/up", ".."),
            "up",
            Reason.SYMLINK),
        Arguments.of(
            "a hard link to another file",
            (TarBuilder) t -> t.special("out/hard", TarConstants.LF_LINK, "/etc/shadow"),
            "hard",
            Reason.HARDLINK),
        Arguments.of(
            "a character device",
            (TarBuilder) t -> t.special("out/mem", TarConstants.LF_CHR, null),
            "mem",
            Reason.DEVICE),
        Arguments.of(
            "a block device",
            (TarBuilder) t -> t.special("out/sda", TarConstants.LF_BLK, null),
            "sda",
            Reason.DEVICE),
        Arguments.of(
            "a named pipe (would block a reader forever)",
            (TarBuilder) t -> t.special("out/fifo", TarConstants.LF_FIFO, null),
            "fifo",
            Reason.FIFO),
        Arguments.of(
            "a contiguous-file entry (isFile() says yes; we only keep plain files)",
            (TarBuilder) t -> t.special("out/contig", TarConstants.LF_CONTIG, null),
            "contig",
            Reason.UNSUPPORTED),
        Arguments.of(
            "a name climbing out of the folder",
            (TarBuilder) t -> t.file("out/../../etc/cron.d/x", "* * * * * root sh"),
            "../../etc/cron.d/x",
            Reason.INVALID_PATH),
        Arguments.of(
            "an absolute name",
            (TarBuilder) t -> t.file("/etc/passwd", "root::0:0"),
            "/etc/passwd",
            Reason.INVALID_PATH),
        Arguments.of(
            "a name outside the output folder",
            (TarBuilder) t -> t.file("workspace/secret", "x"),
            "workspace/secret",
            Reason.INVALID_PATH),
        Arguments.of(
            "a name with a control character (would forge SHA256SUMS lines)",
            (TarBuilder) t -> t.file("out/a\nb", "x"),
            "a<U+000A>b",
            Reason.INVALID_PATH),
        Arguments.of(
            "a name that a right-to-left override shows as invoicetxt.exe (named with the code"
                + " point, so the list does not reorder either)",
            (TarBuilder) t -> t.file("out/invoice\u202Eexe.txt", "MZ"),
            "invoice<U+202E>exe.txt",
            Reason.INVALID_PATH),
        Arguments.of(
            "a zero-width space in a name that looks like ok.txt",
            (TarBuilder) t -> t.file("out/ok\u200B.txt", "not the real one"),
            "ok<U+200B>.txt",
            Reason.INVALID_PATH));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("hostileEntries")
  void hostileEntryIsDroppedAndNamed(String why, TarBuilder entry, String named, Reason reason)
      throws IOException {
    byte[] tar = entry.build(new Tars().dir("out").file("out/ok.txt", "fine")).bytes();
    CollectedOutputs c = collect(tar, ROOMY);
    assertThat(c.dropped()).as(why).containsExactly(new Dropped(named, reason));
    assertThat(c.kept()).extracting(StoredArtifact::path).containsExactly("ok.txt");
    assertThat(store().list("run1")).extracting(StoredArtifact::path).containsExactly("ok.txt");
    // nothing was written outside the store's own run folder
    try (Stream<Path> all = Files.walk(dir.resolve("store"))) {
      assertThat(all.filter(Files::isRegularFile).map(p -> dir.relativize(p).toString()))
          .containsExactlyInAnyOrder("store/run1/files/ok.txt", "store/run1/SHA256SUMS");
    }
  }

  @Test
  void keptFilesCarryTheirSizeAndHashAndReadBack() throws Exception {
    byte[] big = new byte[3 * 1024 * 1024 + 17]; // bigger than any stream buffer on the way
    new Random(42).nextBytes(big);
    byte[] tar =
        new Tars()
            .dir("out")
            .file("out/result.json", "{\"ok\":true}")
            .dir("out/reports")
            .file("out/reports/junit.xml", "<testsuite/>")
            .file("out/big.bin", big)
            .bytes();
    CollectedOutputs c = collect(tar, new OutputCaps(8 << 20, 10));
    assertThat(c.dropped()).isEmpty();
    assertThat(c.kept())
        .extracting(StoredArtifact::path)
        .containsExactly("result.json", "reports/junit.xml", "big.bin");
    StoredArtifact bin = c.kept().get(2);
    assertThat(bin.size()).isEqualTo(big.length);
    assertThat(bin.sha256()).isEqualTo(sha256(big));
    try (InputStream in = store().open("run1", "big.bin")) {
      assertThat(in.readAllBytes()).isEqualTo(big);
    }
    assertThat(c.keptBytes()).isEqualTo(big.length + 11 + 12);
    assertThat(dir.resolve("spool")).isEmptyDirectory();
  }

  @Test
  void overTheByteCapWhatFitsIsKeptAndTheRestNamed() throws IOException {
    byte[] tar =
        new Tars()
            .dir("out")
            .file("out/a", "x".repeat(60))
            .file("out/b", "x".repeat(50)) // 60 + 50 > 100
            .file("out/c", "x".repeat(40)) // 60 + 40 fits
            .bytes();
    CollectedOutputs c = collect(tar, new OutputCaps(100, 10));
    assertThat(c.kept()).extracting(StoredArtifact::path).containsExactly("a", "c");
    assertThat(c.dropped()).containsExactly(new Dropped("b", Reason.OVER_SIZE_CAP));
    assertThat(c.keptBytes()).isEqualTo(100);
  }

  @Test
  void overTheFileCapTheRestAreNamed() throws IOException {
    Tars t = new Tars().dir("out");
    for (int i = 0; i < 5; i++) {
      t.file("out/f" + i, "x");
    }
    CollectedOutputs c = collect(t.bytes(), new OutputCaps(1000, 3));
    assertThat(c.kept()).extracting(StoredArtifact::path).containsExactly("f0", "f1", "f2");
    assertThat(c.dropped())
        .containsExactly(
            new Dropped("f3", Reason.OVER_COUNT_CAP), new Dropped("f4", Reason.OVER_COUNT_CAP));
  }

  @Test
  void aSecondEntryOfAKeptNameOrAFileUnderAKeptFileIsAConflict() throws IOException {
    byte[] tar =
        new Tars()
            .dir("out")
            .file("out/a", "first")
            .file("out/a", "second, trying to replace the first after review")
            .file("out/a/b", "a file under a kept file")
            .file("out/d/e", "fine")
            .file("out/d", "a file where a kept folder is")
            .bytes();
    CollectedOutputs c = collect(tar, ROOMY);
    assertThat(c.kept()).extracting(StoredArtifact::path).containsExactly("a", "d/e");
    assertThat(c.dropped())
        .containsExactly(
            new Dropped("a", Reason.CONFLICT),
            new Dropped("a/b", Reason.CONFLICT),
            new Dropped("d", Reason.CONFLICT));
    try (InputStream in = store().open("run1", "a")) {
      assertThat(new String(in.readAllBytes(), StandardCharsets.UTF_8)).isEqualTo("first");
    }
  }

  @Test
  void droppedNamesAreCappedButCounted() throws IOException {
    Tars t = new Tars().dir("out");
    int n = OutputCollector.MAX_DROPPED_NAMED + 50;
    for (int i = 0; i < n; i++) {
      t.symlink("out/l" + i, "/");
    }
    CollectedOutputs c = collect(t.bytes(), ROOMY);
    assertThat(c.dropped()).hasSize(OutputCollector.MAX_DROPPED_NAMED);
    assertThat(c.droppedCount()).isEqualTo(n);
  }

  @Test
  void anEmptyOrMissingFolderKeepsNothing() throws IOException {
    CollectedOutputs c = collect(new Tars().dir("out").bytes(), ROOMY);
    assertThat(c.kept()).isEmpty();
    assertThat(c.dropped()).isEmpty();
    assertThat(store().list("run1")).isEmpty();
  }

  @Test
  void aTruncatedArchiveDropsTheShortFileAndNamesTheRestButNeverKeepsIt() throws IOException {
    byte[] whole = new Tars().dir("out").file("out/x", "y".repeat(5000)).bytes();
    byte[] cut = java.util.Arrays.copyOf(whole, 512 * 2 + 1000); // header, dir, part of x
    CollectedOutputs c = collect(cut, ROOMY);
    assertThat(c.kept()).isEmpty();
    assertThat(c.dropped())
        .extracting(Dropped::path, Dropped::reason)
        .containsExactly(
            org.assertj.core.groups.Tuple.tuple("x", Reason.TRUNCATED),
            org.assertj.core.groups.Tuple.tuple(
                "(the rest of the archive: Truncated TAR archive)", Reason.TRUNCATED));
    assertThat(store().list("run1")).isEmpty();
  }

  @Test
  void anArchiveCutByItsReaderKeepsWhatCameBeforeAndNamesTheCut() throws IOException {
    // What a backend hands on when it stopped reading a hostile archive at the cap plus headers:
    // a whole file, then the header of a huge (sparse) one, then a read that says why it stops.
    byte[] whole =
        new Tars()
            .dir("out")
            .file("out/a.txt", "kept")
            .file("out/big", "z".repeat(3000))
            .file("out/z.txt", "after the cut")
            .bytes();
    byte[] head = java.util.Arrays.copyOf(whole, 512 * 4 + 512); // out/, a.txt, big's header, 512 B
    java.io.InputStream cutStream =
        new java.io.SequenceInputStream(
            new java.io.ByteArrayInputStream(head),
            new java.io.InputStream() {
              @Override
              public int read() throws IOException {
                throw new IOException("cut at " + head.length + " bytes");
              }
            });
    CollectedOutputs c =
        new OutputCollector(store(), dir.resolve("spool"))
            .collect("run1", cutStream, "out", new OutputCaps(1000, 10));
    assertThat(names(c.kept())).containsExactly("a.txt");
    assertThat(c.dropped())
        .extracting(Dropped::path, Dropped::reason)
        .containsExactly(
            org.assertj.core.groups.Tuple.tuple("big", Reason.OVER_SIZE_CAP),
            org.assertj.core.groups.Tuple.tuple(
                "(the rest of the archive: cut at " + head.length + " bytes)", Reason.TRUNCATED));
    assertThat(names(store().list("run1"))).containsExactly("a.txt");
  }

  static String sha256(byte[] b) throws Exception {
    return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(b));
  }

  static List<String> names(List<StoredArtifact> a) {
    return a.stream().map(StoredArtifact::path).toList();
  }
}
