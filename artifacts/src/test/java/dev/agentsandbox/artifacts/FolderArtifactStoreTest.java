package dev.agentsandbox.artifacts;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class FolderArtifactStoreTest extends ArtifactStoreContract {
  @Override
  ArtifactStore store() {
    return new FolderArtifactStore(tmp.resolve("artifacts"));
  }

  @Test
  void sumsFileIsSha256sumFormat() throws Exception {
    byte[] x = "hello\n".getBytes(StandardCharsets.UTF_8);
    Path c = tmp.resolve("c");
    Files.write(c, x);
    store().put("r1", "dir/hello.txt", c, OutputCollectorTest.sha256(x));
    assertThat(Files.readString(tmp.resolve("artifacts/r1/SHA256SUMS")))
        .isEqualTo(OutputCollectorTest.sha256(x) + "  dir/hello.txt\n");
  }

  @Test
  void aTornSumsLineHidesItsFile() throws Exception {
    byte[] x = "x".getBytes(StandardCharsets.UTF_8);
    Path c = tmp.resolve("c");
    Files.write(c, x);
    store().put("r1", "a", c, OutputCollectorTest.sha256(x));
    Files.writeString(
        tmp.resolve("artifacts/r1/SHA256SUMS"),
        "0123", // a crash mid-append
        java.nio.file.StandardOpenOption.APPEND);
    assertThat(store().list("r1")).extracting(StoredArtifact::path).containsExactly("a");
  }

  @Test
  void aSymlinkPlantedInTheStoreIsNotWrittenThrough() throws Exception {
    Path outside = Files.createDirectories(tmp.resolve("outside"));
    Path files = Files.createDirectories(tmp.resolve("artifacts/r1/files"));
    Files.createSymbolicLink(files.resolve("d"), outside);
    byte[] x = "x".getBytes(StandardCharsets.UTF_8);
    Path c = tmp.resolve("c");
    Files.write(c, x);
    assertThatThrownBy(() -> store().put("r1", "d/f", c, OutputCollectorTest.sha256(x)))
        .isInstanceOf(UnableToStoreArtifactException.class)
        .hasMessageStartingWith("keep artifact 'd/f' of run r1 in " + store().describe() + ": ")
        .hasMessageContaining("symbolic link");
    assertThat(outside).isEmptyDirectory();
  }

  /**
   * An artifact whose name is what the store once used as another's scratch name: both are kept,
   * each with its own bytes, and the run's folder holds nothing but what it lists.
   */
  @Test
  void anArtifactNamedLikeAScratchFileSurvivesTheArtifactItsNameShadows() throws Exception {
    ArtifactStore store = store();
    for (String[] named :
        new String[][] {
          {".partial-X", "the artifact called .partial-X"},
          {"X", "the artifact called X"},
          {"scratch", "a file called scratch"},
          {"d/.partial-y", "nested .partial-y"},
          {"d/y", "nested y"}
        }) {
      byte[] bytes = named[1].getBytes(StandardCharsets.UTF_8);
      Path content = tmp.resolve("content");
      Files.write(content, bytes);
      store.put("r1", named[0], content, OutputCollectorTest.sha256(bytes));
    }
    assertThat(store.list("r1"))
        .extracting(StoredArtifact::path)
        .containsExactly(".partial-X", "X", "d/.partial-y", "d/y", "scratch");
    for (String[] named :
        new String[][] {
          {".partial-X", "the artifact called .partial-X"},
          {"X", "the artifact called X"},
          {"d/.partial-y", "nested .partial-y"}
        }) {
      try (var in = store.open("r1", named[0])) {
        assertThat(new String(in.readAllBytes(), StandardCharsets.UTF_8))
            .as(named[0])
            .isEqualTo(named[1]);
      }
    }
    try (var scratch = Files.list(tmp.resolve("artifacts/r1/scratch"))) {
      assertThat(scratch).as("no scratch file left behind").isEmpty();
    }
  }

  @Test
  void aNameAsLongAsASegmentMayBeIsKept() throws Exception {
    // A scratch name built from the artifact's own would be longer than the file system allows.
    String longest = "n".repeat(ArtifactPath.MAX_SEGMENT);
    byte[] bytes = "x".getBytes(StandardCharsets.UTF_8);
    Path content = tmp.resolve("content");
    Files.write(content, bytes);
    store().put("r1", longest, content, OutputCollectorTest.sha256(bytes));
    assertThat(store().list("r1")).extracting(StoredArtifact::path).containsExactly(longest);
  }

  @Test
  void everyFolderIsTheOwnersOnlyAndEveryFileToo() throws Exception {
    byte[] bytes = "x".getBytes(StandardCharsets.UTF_8);
    Path content = tmp.resolve("content");
    Files.write(content, bytes);
    Files.setPosixFilePermissions(content, PosixFilePermissions.fromString("rw-rw-rw-"));
    store().put("r1", "deep/er/file.txt", content, OutputCollectorTest.sha256(bytes));
    List<String> wrong = new ArrayList<>();
    try (var walk = Files.walk(tmp.resolve("artifacts"))) {
      for (Path p : walk.toList()) {
        String mode = PosixFilePermissions.toString(Files.getPosixFilePermissions(p));
        String expected = Files.isDirectory(p) ? "rwx------" : "rw-------";
        if (!mode.equals(expected)) {
          wrong.add(tmp.relativize(p) + " " + mode);
        }
      }
    }
    assertThat(wrong).as("paths readable by others").isEmpty();
  }
}
