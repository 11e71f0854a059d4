package dev.agentsandbox.backend.k8s;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.agentsandbox.artifacts.CollectedOutputs;
import dev.agentsandbox.artifacts.CollectedOutputs.Reason;
import dev.agentsandbox.artifacts.FolderArtifactStore;
import dev.agentsandbox.artifacts.OutputCaps;
import dev.agentsandbox.artifacts.OutputCollector;
import dev.agentsandbox.artifacts.StoredArtifact;
import java.io.IOException;
import java.io.InputStream;
import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The sidecar's stream: the real script under the host's busybox, and every way its log can be
 * wrong, each refused whole.
 */
class OutputFrameTest {
  private static final long LIMIT = 1 << 20;

  @TempDir Path dir;

  private long decode(String log) throws Exception {
    return OutputFrame.decode(new StringReader(log), dir.resolve("out.tar"), LIMIT);
  }

  @Test
  void aFramedTarDecodesToTheSameBytes() throws Exception {
    byte[] tar = new OutputTars().folder("out").file("out/a.txt", "hello\n").bytes();
    // Lines before the begin line (a shell's complaint, say) are skipped.
    assertThat(decode("sh: something\n" + OutputTars.frame(tar))).isEqualTo(tar.length);
    assertThat(Files.readAllBytes(dir.resolve("out.tar"))).isEqualTo(tar);
    // CRLF line ends read the same.
    assertThat(decode(OutputTars.frame(tar).replace("\n", "\r\n"))).isEqualTo(tar.length);
  }

  static Stream<Arguments> brokenFrames() {
    byte[] tar = new OutputTars().folder("out").file("out/a.txt", "hello\n").bytes();
    String body = OutputTars.base64Lines(tar);
    String sha = OutputTars.sha256(tar);
    String begin = OutputFrame.BEGIN + "\n";
    String end = OutputTars.endLine(tar.length, sha) + "\n";
    String cut = body.substring(0, body.length() / 2);
    cut = cut.substring(0, cut.lastIndexOf('\n') + 1);
    return Stream.of(
        Arguments.of("empty log", "", "no begin line"),
        Arguments.of("only the agent's chatter", "hello\nworld\n", "no begin line"),
        Arguments.of("no end line", begin + body, "without its end line"),
        Arguments.of("cut in the middle", begin + cut, "without its end line"),
        Arguments.of("cut, then an end line", begin + cut + end, "declares " + tar.length),
        Arguments.of(
            "wrong hash",
            begin + body + OutputTars.endLine(tar.length, "0".repeat(64)) + "\n",
            "SHA-256 does not match"),
        Arguments.of(
            "wrong count",
            begin + body + OutputTars.endLine(tar.length + 1, sha) + "\n",
            "declares " + (tar.length + 1)),
        Arguments.of(
            "malformed end line",
            begin + body + OutputFrame.END + " 12 zz\n",
            "malformed end line"),
        Arguments.of("junk inside", begin + "not base64!\n" + body + end, "neither base64"),
        Arguments.of(
            "a second begin inside", begin + begin + body + end, "neither base64 nor the end"),
        Arguments.of("bad base64", begin + "A===\n" + end, "not valid base64"),
        Arguments.of("text after padding", begin + "QQ==\nQUFB\n" + end, "after its padding"),
        Arguments.of("half a group at the end", begin + "QUFB\nQU\n" + end, "middle of a group"),
        Arguments.of("a line too long", begin + "A".repeat(5000) + "\n" + end, "longer than"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("brokenFrames")
  void aBrokenStreamIsRefusedWhole(String what, String log, String reason) {
    assertThatThrownBy(() -> decode(log))
        .isInstanceOf(OutputFrame.FrameException.class)
        .hasMessageContaining(reason);
  }

  @Test
  void aStreamOverTheLimitIsRefusedWithoutReadingOn() {
    byte[] big = new byte[(int) LIMIT + 1];
    String log = OutputTars.frame(big);
    assertThatThrownBy(() -> decode(log))
        .isInstanceOf(OutputFrame.FrameException.class)
        .hasMessageContaining("more than " + LIMIT + " bytes");
  }

  /**
   * The sidecar's script as the pod runs it, under the host's busybox (the proxy image's shell is
   * busybox): it idles until SIGTERM, then streams the folder, and the stream decodes and collects
   * with the right names, sizes and hashes; its symlink is archived as a link and refused.
   */
  @Test
  void theSidecarScriptStreamsTheOutFolderWhenTerminated() throws Exception {
    Path workspace = Files.createDirectories(dir.resolve("workspace"));
    Path out = Files.createDirectories(workspace.resolve("out/sub"));
    Path scratch = Files.createDirectories(dir.resolve("scratch"));
    byte[] binary = new byte[70_000];
    new java.util.Random(7).nextBytes(binary);
    Files.writeString(workspace.resolve("out/result.json"), "{\"ok\":true}\n");
    Files.write(out.resolve("data.bin"), binary);
    Files.createSymbolicLink(workspace.resolve("out/passwd"), Path.of("/etc/passwd"));
    Path log = dir.resolve("sidecar.log");
    Process sidecar =
        new ProcessBuilder(
                "busybox",
                "sh",
                "-c",
                SandboxPods.COLLECT_SCRIPT,
                "sh",
                workspace.toString(),
                scratch.toString())
            .redirectErrorStream(true)
            .redirectOutput(log.toFile())
            .start();
    try {
      // Idle until told: nothing is written while the agent may still be writing.
      assertThat(sidecar.waitFor(1500, TimeUnit.MILLISECONDS)).isFalse();
      assertThat(Files.readString(log)).isEmpty();
      new ProcessBuilder("kill", "-TERM", Long.toString(sidecar.pid())).start().waitFor();
      assertThat(sidecar.waitFor(30, TimeUnit.SECONDS)).isTrue();
      assertThat(sidecar.exitValue()).isZero();
    } finally {
      sidecar.destroyForcibly();
    }
    Path tar = dir.resolve("out.tar");
    try (var reader = Files.newBufferedReader(log, StandardCharsets.US_ASCII)) {
      OutputFrame.decode(reader, tar, LIMIT);
    }
    CollectedOutputs collected = collect(tar, new OutputCaps(LIMIT, 100));
    assertThat(collected.kept())
        .containsExactlyInAnyOrder(
            new StoredArtifact(
                "result.json",
                12,
                OutputTars.sha256("{\"ok\":true}\n".getBytes(StandardCharsets.UTF_8))),
            new StoredArtifact("sub/data.bin", binary.length, OutputTars.sha256(binary)));
    assertThat(collected.dropped())
        .containsExactly(new CollectedOutputs.Dropped("passwd", Reason.SYMLINK));
  }

  private CollectedOutputs collect(Path tar, OutputCaps caps) throws IOException {
    FolderArtifactStore store = new FolderArtifactStore(dir.resolve("store"));
    try (InputStream in = Files.newInputStream(tar)) {
      return new OutputCollector(store, dir.resolve("spool")).collect("run1", in, "out", caps);
    }
  }
}
