package dev.agentsandbox.steprunner;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.agentsandbox.backend.session.ArchiveWritten;
import dev.agentsandbox.backend.session.PathInfo;
import dev.agentsandbox.backend.session.PathRefusedException;
import dev.agentsandbox.backend.session.PathRefusedException.Reason;
import dev.agentsandbox.backend.session.UnableToRunStepException;
import dev.agentsandbox.backend.session.WorkspacePath;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The runner's file operations, each with openat2 and with the per-segment walk alone: links are
 * refused wherever they are on a path, never followed, and nothing is written outside.
 */
class StepRunnerFilesTest {
  @TempDir Path dir;
  private LocalRunner runner;
  private Path ws;
  private Path outside;

  private RunnerFiles start(String mode) throws Exception {
    runner =
        mode.equals("openat2") ? LocalRunner.start(dir) : LocalRunner.start(dir, "--no-openat2");
    ws = runner.workspace;
    outside = Files.createDirectories(dir.resolve("outside"));
    Files.writeString(outside.resolve("secret"), "not for the workspace");
    return runner.client.files();
  }

  @AfterEach
  void stop() throws Exception {
    if (runner != null) {
      runner.close();
      assertThat(runner.violations).as("protocol violations").isEmpty();
      try (Stream<Path> left = Files.list(outside)) {
        assertThat(left.map(p -> p.getFileName().toString())).containsExactly("secret");
      }
    }
  }

  private static WorkspacePath p(String text) {
    return WorkspacePath.parse(text);
  }

  private static ByteArrayInputStream bytes(String text) {
    return new ByteArrayInputStream(text.getBytes(StandardCharsets.UTF_8));
  }

  private static Reason reasonOf(Runnable operation) {
    try {
      operation.run();
    } catch (PathRefusedException e) {
      return e.reason();
    }
    throw new AssertionError("not refused");
  }

  @ParameterizedTest
  @ValueSource(strings = {"openat2", "walk"})
  void aPutMakesItsParentsAndAppearsWhole(String mode) throws Exception {
    RunnerFiles files = start(mode);
    assertThat(files.putFile(p("a/b/c.txt"), bytes("hello"), 100)).isEqualTo(5);
    Path written = ws.resolve("a/b/c.txt");
    assertThat(Files.readString(written)).isEqualTo("hello");
    assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(written)))
        .isEqualTo("rw-r--r--");
    assertThat(files.putFile(p("/workspace/a/b/c.txt"), bytes("replaced"), 100)).isEqualTo(8);
    assertThat(Files.readString(written)).isEqualTo("replaced");
    try (Stream<Path> inB = Files.list(ws.resolve("a/b"))) {
      assertThat(inB.map(x -> x.getFileName().toString())).containsExactly("c.txt");
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"openat2", "walk"})
  void aPutOverTheCapWritesNothing(String mode) throws Exception {
    RunnerFiles files = start(mode);
    byte[] big = new byte[200_000];
    ByteArrayInputStream source = new ByteArrayInputStream(big);
    assertThatThrownBy(() -> files.putFile(p("big.bin"), source, 100_000))
        .isInstanceOfSatisfying(
            PathRefusedException.class, e -> assertThat(e.reason()).isEqualTo(Reason.TOO_LARGE));
    assertThat(source.available()).as("read one byte past the cap, no more").isEqualTo(99_999);
    try (Stream<Path> left = Files.list(ws)) {
      assertThat(left).as("no file and no temporary left").isEmpty();
    }
    assertThat(files.putFile(p("exact.bin"), new ByteArrayInputStream(big), 200_000))
        .isEqualTo(200_000);
  }

  /** Named rows: where the link is, and what each operation must answer. */
  @ParameterizedTest
  @ValueSource(strings = {"openat2", "walk"})
  void aLinkAnywhereOnAPathIsRefusedByEveryOperation(String mode) throws Exception {
    RunnerFiles files = start(mode);
    Files.createDirectories(ws.resolve("real/inner"));
    Files.createSymbolicLink(ws.resolve("out"), outside);
    Files.createSymbolicLink(ws.resolve("real/inner/up"), outside);
    Files.createSymbolicLink(ws.resolve("inside"), ws.resolve("real"));
    Files.createSymbolicLink(ws.resolve("secret-link"), outside.resolve("secret"));
    Map<String, Runnable> rows = new TreeMap<>();
    rows.put("put through a link to outside", () -> files.putFile(p("out/x"), bytes("x"), 10));
    rows.put("put through a deep link", () -> files.putFile(p("real/inner/up/x"), bytes("x"), 10));
    rows.put(
        "put through a link inside the workspace",
        () -> files.putFile(p("inside/x"), bytes("x"), 10));
    rows.put("put onto a link to a file", () -> files.putFile(p("secret-link"), bytes("x"), 10));
    rows.put("mkdir through a link", () -> files.mkdir(p("out/newdir")));
    rows.put(
        "read a link to a file",
        () -> files.readFile(p("secret-link"), new ByteArrayOutputStream(), 100));
    rows.put(
        "read through a link",
        () -> files.readFile(p("out/secret"), new ByteArrayOutputStream(), 100));
    rows.put("list a link", () -> files.list(p("out"), 10));
    rows.put("list through a deep link", () -> files.list(p("real/inner/up"), 10));
    rows.put("stat through a link", () -> files.stat(p("out/secret")));
    rows.put("archive a link", () -> files.readFolder(p("out"), new ByteArrayOutputStream(), 100));
    rows.forEach((name, row) -> assertThat(reasonOf(row)).as(name).isEqualTo(Reason.SYMLINK));
    assertThat(Files.readString(outside.resolve("secret"))).isEqualTo("not for the workspace");
    assertThat(files.stat(p("secret-link")).kind())
        .as("a link itself is seen as one")
        .isEqualTo(PathInfo.Kind.SYMLINK);
  }

  @ParameterizedTest
  @ValueSource(strings = {"openat2", "walk"})
  void kindsSizesAndRefusalsByWhatIsThere(String mode) throws Exception {
    RunnerFiles files = start(mode);
    Files.createDirectories(ws.resolve("folder"));
    Files.writeString(ws.resolve("folder/file"), "12345");
    new ProcessBuilder("mkfifo", ws.resolve("fifo").toString()).start().waitFor();
    try (RandomAccessFile sparse = new RandomAccessFile(ws.resolve("sparse").toFile(), "rw")) {
      sparse.setLength(50L << 20);
    }
    assertThat(files.stat(p("folder")).kind()).isEqualTo(PathInfo.Kind.FOLDER);
    PathInfo file = files.stat(p("folder/file"));
    assertThat(file.kind()).isEqualTo(PathInfo.Kind.FILE);
    assertThat(file.size()).isEqualTo(5);
    assertThat(file.mode() & 0777).isEqualTo(0644);
    assertThat(files.stat(p("fifo")).kind()).isEqualTo(PathInfo.Kind.OTHER);
    assertThat(files.stat(p("sparse")).size()).as("apparent size").isEqualTo(50L << 20);
    assertThat(files.stat(WorkspacePath.root()).kind()).isEqualTo(PathInfo.Kind.FOLDER);
    Map<String, Runnable> rows = new TreeMap<>();
    rows.put("read a folder", () -> files.readFile(p("folder"), new ByteArrayOutputStream(), 10));
    rows.put("put onto a folder", () -> files.putFile(p("folder"), bytes("x"), 10));
    rows.put("put below a file", () -> files.putFile(p("folder/file/x"), bytes("x"), 10));
    rows.put("list a file", () -> files.list(p("folder/file"), 10));
    rows.put("mkdir over a file", () -> files.mkdir(p("folder/file")));
    rows.forEach((name, row) -> assertThat(reasonOf(row)).as(name).isEqualTo(Reason.WRONG_KIND));
    assertThat(reasonOf(() -> files.readFile(p("fifo"), new ByteArrayOutputStream(), 10)))
        .isEqualTo(Reason.NOT_REGULAR);
    assertThat(reasonOf(() -> files.putFile(p("fifo"), bytes("x"), 10)))
        .isEqualTo(Reason.NOT_REGULAR);
    assertThat(reasonOf(() -> files.readFile(p("sparse"), new ByteArrayOutputStream(), 1 << 20)))
        .as("a sparse file counts its apparent size")
        .isEqualTo(Reason.TOO_LARGE);
    assertThat(reasonOf(() -> files.stat(p("missing/x")))).isEqualTo(Reason.NOT_FOUND);
    assertThat(reasonOf(() -> files.readFile(p("missing"), new ByteArrayOutputStream(), 10)))
        .isEqualTo(Reason.NOT_FOUND);
    ByteArrayOutputStream got = new ByteArrayOutputStream();
    files.readFile(p("folder/file"), got, 5);
    assertThat(got.toString(StandardCharsets.UTF_8)).isEqualTo("12345");
    assertThat(reasonOf(() -> files.readFile(p("folder/file"), new ByteArrayOutputStream(), 4)))
        .isEqualTo(Reason.TOO_LARGE);
  }

  @ParameterizedTest
  @ValueSource(strings = {"openat2", "walk"})
  void aListingIsInNameOrderAndBounded(String mode) throws Exception {
    RunnerFiles files = start(mode);
    for (String name : List.of("b", "a", "d", "c", "e")) {
      Files.writeString(ws.resolve(name), name);
    }
    Files.createSymbolicLink(ws.resolve("f"), outside);
    assertThat(files.list(WorkspacePath.root(), 10).stream().map(e -> e.path().name()))
        .containsExactly("a", "b", "c", "d", "e", "f");
    assertThat(files.list(WorkspacePath.root(), 10).get(5).kind()).isEqualTo(PathInfo.Kind.SYMLINK);
    assertThat(files.list(WorkspacePath.root(), 3).stream().map(e -> e.path().relative()))
        .containsExactly("a", "b", "c");
  }

  @ParameterizedTest
  @ValueSource(strings = {"openat2", "walk"})
  void aFolderComesBackAsATarWithoutItsLinks(String mode) throws Exception {
    RunnerFiles files = start(mode);
    Files.createDirectories(ws.resolve("src/pkg/empty"));
    Files.writeString(ws.resolve("src/pkg/a.py"), "print('a')\n");
    byte[] big = new byte[300_000];
    new java.util.Random(7).nextBytes(big);
    Files.write(ws.resolve("src/big.bin"), big);
    Files.createSymbolicLink(ws.resolve("src/pkg/escape"), outside);
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    List<String> skipped = files.readFolder(p("src"), out, 1 << 20);
    assertThat(skipped).containsExactly("pkg/escape");
    Map<String, byte[]> entries = new TreeMap<>();
    try (TarArchiveInputStream tar =
        new TarArchiveInputStream(new ByteArrayInputStream(out.toByteArray()))) {
      TarArchiveEntry entry;
      while ((entry = tar.getNextEntry()) != null) {
        entries.put(entry.getName(), tar.readAllBytes());
      }
    }
    assertThat(entries).containsOnlyKeys("big.bin", "pkg/", "pkg/a.py", "pkg/empty/");
    assertThat(entries.get("big.bin")).isEqualTo(big);
    assertThat(new String(entries.get("pkg/a.py"), StandardCharsets.UTF_8))
        .isEqualTo("print('a')\n");
    assertThat(reasonOf(() -> files.readFolder(p("src"), new ByteArrayOutputStream(), 299_999)))
        .isEqualTo(Reason.TOO_LARGE);
  }

  @ParameterizedTest
  @ValueSource(strings = {"openat2", "walk"})
  void aTarIsPutAsFoldersAndFilesAndAHostileEntryIsRefused(String mode) throws Exception {
    RunnerFiles files = start(mode);
    ByteArrayOutputStream tar = new ByteArrayOutputStream();
    try (TarArchiveOutputStream out = new TarArchiveOutputStream(tar)) {
      out.putArchiveEntry(new TarArchiveEntry("proj/"));
      out.closeArchiveEntry();
      byte[] content = "def test(): pass\n".getBytes(StandardCharsets.UTF_8);
      TarArchiveEntry file = new TarArchiveEntry("proj/tests/test_a.py");
      file.setSize(content.length);
      out.putArchiveEntry(file);
      out.write(content);
      out.closeArchiveEntry();
    }
    ArchiveWritten written =
        files.putArchive(p("in"), new ByteArrayInputStream(tar.toByteArray()), 1 << 20);
    assertThat(written).isEqualTo(new ArchiveWritten(1, 1, 17));
    assertThat(Files.readString(ws.resolve("in/proj/tests/test_a.py")))
        .isEqualTo("def test(): pass\n");
    for (String hostile : List.of("../escape", "a/../../b", "/etc/passwd")) {
      ByteArrayOutputStream bad = new ByteArrayOutputStream();
      try (TarArchiveOutputStream out = new TarArchiveOutputStream(bad)) {
        TarArchiveEntry entry = new TarArchiveEntry(hostile, true);
        entry.setSize(1);
        out.putArchiveEntry(entry);
        out.write('x');
        out.closeArchiveEntry();
      }
      assertThatThrownBy(
              () -> files.putArchive(p("in"), new ByteArrayInputStream(bad.toByteArray()), 1 << 20))
          .as(hostile)
          .isInstanceOf(UnableToRunStepException.class);
    }
    ByteArrayOutputStream link = new ByteArrayOutputStream();
    try (TarArchiveOutputStream out = new TarArchiveOutputStream(link)) {
      TarArchiveEntry entry = new TarArchiveEntry("in/l", TarArchiveEntry.LF_SYMLINK);
      entry.setLinkName(outside.toString());
      out.putArchiveEntry(entry);
      out.closeArchiveEntry();
    }
    assertThatThrownBy(
            () -> files.putArchive(p("x"), new ByteArrayInputStream(link.toByteArray()), 1 << 20))
        .hasMessageContaining("is a link");
    assertThat(
            reasonOf(
                () -> files.putArchive(p("big"), new ByteArrayInputStream(tar.toByteArray()), 600)))
        .isEqualTo(Reason.TOO_LARGE);
  }

  @ParameterizedTest
  @ValueSource(strings = {"openat2", "walk"})
  void aMkdirMakesWhatIsMissingAndCountsIt(String mode) throws Exception {
    RunnerFiles files = start(mode);
    assertThat(files.mkdir(p("x/y/z"))).isEqualTo(3);
    assertThat(files.mkdir(p("x/y/z"))).isZero();
    assertThat(Files.isDirectory(ws.resolve("x/y/z"))).isTrue();
    List<String> kinds = new ArrayList<>();
    files.list(p("x"), 10).forEach(e -> kinds.add(e.kind().wireName()));
    assertThat(kinds).containsExactly("folder");
  }
}
