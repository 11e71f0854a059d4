package dev.agentsandbox.artifacts;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
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
}
