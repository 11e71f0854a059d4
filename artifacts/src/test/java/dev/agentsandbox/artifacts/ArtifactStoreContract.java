package dev.agentsandbox.artifacts;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** One contract, every store: run by a few-line subclass per implementation. */
abstract class ArtifactStoreContract {
  @TempDir Path tmp;

  abstract ArtifactStore store();

  private Path content(String name, byte[] bytes) throws IOException {
    Path p = tmp.resolve(name);
    Files.write(p, bytes);
    return p;
  }

  @Test
  void putListOpenRoundTrip() throws Exception {
    byte[] big = new byte[2 * 1024 * 1024 + 3];
    new Random(7).nextBytes(big);
    ArtifactStore s = store();
    String bigSha = OutputCollectorTest.sha256(big);
    StoredArtifact a = s.put("r1", "reports/big.bin", content("b", big), bigSha);
    byte[] small = "{\"ok\":true}".getBytes(StandardCharsets.UTF_8);
    s.put("r1", "result.json", content("s", small), OutputCollectorTest.sha256(small));
    assertThat(a).isEqualTo(new StoredArtifact("reports/big.bin", big.length, bigSha));
    assertThat(s.list("r1"))
        .containsExactly(
            new StoredArtifact("reports/big.bin", big.length, bigSha),
            new StoredArtifact("result.json", small.length, OutputCollectorTest.sha256(small)));
    try (InputStream in = s.open("r1", "reports/big.bin")) {
      assertThat(in.readAllBytes()).isEqualTo(big);
    }
  }

  @Test
  void runsAreApart() throws Exception {
    ArtifactStore s = store();
    byte[] x = "x".getBytes(StandardCharsets.UTF_8);
    s.put("r1", "a", content("x", x), OutputCollectorTest.sha256(x));
    assertThat(s.list("r2")).isEmpty();
    assertThatThrownBy(() -> s.open("r2", "a")).isInstanceOf(ArtifactNotFoundException.class);
    // a run id that is a prefix of another's sees nothing of it
    s.put("r10", "b", content("y", x), OutputCollectorTest.sha256(x));
    assertThat(s.list("r1")).extracting(StoredArtifact::path).containsExactly("a");
  }

  @Test
  void runIdsNameEveryRunWithArtifactsUntilItIsDeleted() throws Exception {
    ArtifactStore s = store();
    assertThat(s.runIds()).isEmpty();
    byte[] x = "x".getBytes(StandardCharsets.UTF_8);
    s.put("r1", "a", content("x", x), OutputCollectorTest.sha256(x));
    s.put("r10", "deep/b", content("y", x), OutputCollectorTest.sha256(x));
    s.put("r2", "c", content("z", x), OutputCollectorTest.sha256(x));
    assertThat(s.runIds()).containsExactlyInAnyOrder("r1", "r10", "r2");
    s.deleteRun("r10");
    assertThat(s.runIds()).containsExactlyInAnyOrder("r1", "r2");
    assertThat(s.list("r1")).extracting(StoredArtifact::path).containsExactly("a");
  }

  @Test
  void missingArtifactIsNotFound() {
    assertThatThrownBy(() -> store().open("r1", "nope.txt"))
        .isInstanceOf(ArtifactNotFoundException.class)
        .hasMessageContaining("no such artifact");
  }

  @Test
  void namesOutsideTheRunAreRefusedBeforeTheStoreIsAsked() throws Exception {
    ArtifactStore s = store();
    byte[] x = "x".getBytes(StandardCharsets.UTF_8);
    s.put("r2", "secret", content("x", x), OutputCollectorTest.sha256(x));
    assertThatThrownBy(() -> s.open("r1", "../r2/secret"))
        .isInstanceOf(InvalidArtifactPathException.class);
    assertThatThrownBy(() -> s.open("r1", "/r2/secret"))
        .isInstanceOf(InvalidArtifactPathException.class);
    assertThatThrownBy(() -> s.open("../r2", "secret"))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> s.put("r1", "../x", content("y", x), OutputCollectorTest.sha256(x)))
        .isInstanceOf(InvalidArtifactPathException.class);
  }

  @Test
  void deleteRunRemovesOnlyThatRun() throws Exception {
    ArtifactStore s = store();
    byte[] x = "x".getBytes(StandardCharsets.UTF_8);
    s.put("r1", "a", content("x", x), OutputCollectorTest.sha256(x));
    s.put("r1", "d/b", content("y", x), OutputCollectorTest.sha256(x));
    s.put("r2", "a", content("z", x), OutputCollectorTest.sha256(x));
    s.deleteRun("r1");
    s.deleteRun("r1"); // idempotent
    s.deleteRun("r9"); // unknown run: no error
    assertThat(s.list("r1")).isEmpty();
    assertThat(s.list("r2")).hasSize(1);
  }
}
