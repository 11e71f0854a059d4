package dev.agentsandbox.artifacts;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.agentsandbox.artifacts.CollectedOutputs.Reason;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Optional;
import java.util.stream.Stream;
import org.apache.commons.compress.archivers.tar.TarConstants;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A client's archive going into a session, read as hostile: each row hides one bad entry among good
 * ones and must see the whole archive refused, naming that entry and the rule it broke.
 */
class InboundArchiveTest {
  @TempDir Path dir;

  interface TarBuilder {
    Tars build(Tars t) throws IOException;
  }

  private Path write(byte[] tar) throws IOException {
    Path file = dir.resolve("in.tar");
    Files.write(file, tar);
    return file;
  }

  static Stream<Arguments> hostileEntries() {
    return Stream.of(
        Arguments.of(
            "a symlink to plant a way out of /workspace",
            (TarBuilder) t -> t.symlink("app/up", "/etc"),
            "app/up",
            Reason.SYMLINK),
        Arguments.of(
            "a symlink inside the workspace (links are never written, wherever they point)",
            (TarBuilder) t -> t.symlink("app/self", "main.py"),
            "app/self",
            Reason.SYMLINK),
        Arguments.of(
            "a hard link to a host file",
            (TarBuilder) t -> t.special("app/hard", TarConstants.LF_LINK, "/etc/shadow"),
            "app/hard",
            Reason.HARDLINK),
        Arguments.of(
            "a character device",
            (TarBuilder) t -> t.special("app/mem", TarConstants.LF_CHR, null),
            "app/mem",
            Reason.DEVICE),
        Arguments.of(
            "a block device",
            (TarBuilder) t -> t.special("app/sda", TarConstants.LF_BLK, null),
            "app/sda",
            Reason.DEVICE),
        Arguments.of(
            "a fifo that would block whoever opens it",
            (TarBuilder) t -> t.special("app/fifo", TarConstants.LF_FIFO, null),
            "app/fifo",
            Reason.FIFO),
        Arguments.of(
            "a contiguous-file entry",
            (TarBuilder) t -> t.special("app/contig", TarConstants.LF_CONTIG, null),
            "app/contig",
            Reason.UNSUPPORTED),
        Arguments.of(
            "a name climbing out with ..",
            (TarBuilder) t -> t.file("app/../../etc/cron.d/x", "* * * * * root sh"),
            "app/../../etc/cron.d/x",
            Reason.INVALID_PATH),
        Arguments.of(
            "an absolute name",
            (TarBuilder) t -> t.file("/etc/passwd", "root::0:0"),
            "/etc/passwd",
            Reason.INVALID_PATH),
        Arguments.of(
            "a name with a control character",
            (TarBuilder) t -> t.file("app/a\nb", "x"),
            "app/a<U+000A>b",
            Reason.INVALID_PATH),
        Arguments.of(
            "a segment over 255 bytes",
            (TarBuilder) t -> t.file("app/" + "n".repeat(256), "x"),
            "app/" + "n".repeat(193) + "...",
            Reason.INVALID_PATH),
        Arguments.of(
            "an empty segment",
            (TarBuilder) t -> t.file("app//x", "x"),
            "app//x",
            Reason.INVALID_PATH),
        Arguments.of(
            "a second entry of a name already in the archive (the second would win)",
            (TarBuilder) t -> t.file("app/main.py", "import os; os.system('curl evil')"),
            "app/main.py",
            Reason.CONFLICT),
        Arguments.of(
            "a file where a folder of the archive is",
            (TarBuilder) t -> t.file("app", "a file over the folder"),
            "app",
            Reason.CONFLICT),
        Arguments.of(
            "a folder where a file of the archive is",
            (TarBuilder) t -> t.dir("app/main.py"),
            "app/main.py/",
            Reason.CONFLICT),
        Arguments.of(
            "a file below a file of the archive",
            (TarBuilder) t -> t.file("app/main.py/x", "x"),
            "app/main.py/x",
            Reason.CONFLICT));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("hostileEntries")
  void oneHostileEntryRefusesTheWholeArchiveNamingIt(
      String why, TarBuilder hostile, String named, Reason reason) throws IOException {
    byte[] tar =
        hostile
            .build(new Tars().dir("app").file("app/main.py", "print('hi')\n"))
            .file("app/after.txt", "written after the bad entry")
            .bytes();
    assertThatThrownBy(() -> InboundArchive.check(write(tar), 1 << 20))
        .as(why)
        .isInstanceOfSatisfying(
            InvalidInboundArchiveException.class,
            e -> {
              assertThat(e.entry()).isEqualTo(named);
              assertThat(e.reason()).contains(reason);
              assertThat(e.getMessage()).contains(named).contains(reason.wireName());
            });
  }

  @Test
  void aProjectWithNestedFoldersIsCountedAndADotSlashPrefixIsTheTarget() throws IOException {
    byte[] tar =
        new Tars()
            .dir("./")
            .dir("./src")
            .file("./src/calc.py", "def add(a, b):\n    return a + b\n")
            .file("./tests/test_calc.py", "from calc import add\n")
            .file("./README", "")
            .bytes();
    InboundArchive.Checked checked = InboundArchive.check(write(tar), 1 << 20);
    assertThat(checked.files()).isEqualTo(3);
    assertThat(checked.folders()).isEqualTo(1);
    assertThat(checked.bytes()).isEqualTo(53);
  }

  @Test
  void filesOverTheCapRefuseTheArchive() throws IOException {
    byte[] tar = new Tars().file("a", new byte[600]).file("b", new byte[600]).bytes();
    assertThat(InboundArchive.check(write(tar), 1200).files()).isEqualTo(2);
    assertThatThrownBy(() -> InboundArchive.check(write(tar), 1199))
        .isInstanceOfSatisfying(
            InvalidInboundArchiveException.class,
            e -> {
              assertThat(e.entry()).isEqualTo("b");
              assertThat(e.reason()).contains(Reason.OVER_SIZE_CAP);
            });
  }

  @Test
  void anArchiveCutShortInsideAnEntryIsRefusedAsTruncated() throws IOException {
    byte[] whole = new Tars().file("big.bin", new byte[10_000]).bytes();
    byte[] cut = Arrays.copyOf(whole, 512 + 4096);
    assertThatThrownBy(() -> InboundArchive.check(write(cut), 1 << 20))
        .isInstanceOfSatisfying(
            InvalidInboundArchiveException.class,
            e -> assertThat(e.reason()).contains(Reason.TRUNCATED));
  }

  @Test
  void bytesThatAreNoTarArchiveAreRefusedWithoutEchoingThem() throws IOException {
    byte[] junk = "{\"not\": \"a tar\"}".repeat(64).getBytes(StandardCharsets.UTF_8);
    assertThatThrownBy(() -> InboundArchive.check(write(junk), 1 << 20))
        .isInstanceOfSatisfying(
            InvalidInboundArchiveException.class,
            e -> {
              assertThat(e.reason()).isEqualTo(Optional.empty());
              assertThat(e.entry()).isEqualTo("(archive)");
              assertThat(e.getMessage()).doesNotContain("not\"");
            });
  }

  @Test
  void moreEntriesThanTheCountCapRefuseTheArchive() throws IOException {
    Tars many = new Tars();
    for (int i = 0; i <= InboundArchive.MAX_ENTRIES; i++) {
      many.dir("d" + i);
    }
    byte[] tar = many.bytes();
    assertThatThrownBy(() -> InboundArchive.check(write(tar), 1 << 20))
        .isInstanceOfSatisfying(
            InvalidInboundArchiveException.class,
            e -> assertThat(e.reason()).contains(Reason.OVER_COUNT_CAP));
  }
}
