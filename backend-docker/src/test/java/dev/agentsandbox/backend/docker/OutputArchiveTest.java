package dev.agentsandbox.backend.docker;

import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.policy.config.OutputLimits;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import org.junit.jupiter.api.Test;

/**
 * How much of a hostile output archive is read: the agent's cap plus room for headers, and not a
 * byte more, however long the daemon's stream is. (The archive from a real daemon, a sparse file in
 * a real workspace, is {@code DockerOutputBoundIT}'s.)
 */
class OutputArchiveTest {
  @Test
  void theBoundIsTheCapPlusRoomForTheHeadersOfEveryFileItMayKeep() {
    assertThat(OutputArchive.bound(OutputLimits.DEFAULT))
        .isEqualTo((16L << 20) + (1L << 20) + 101L * 2048);
    assertThat(OutputArchive.bound(new OutputLimits(0, 0)))
        .as("an agent that keeps nothing still reads the folder's own header")
        .isEqualTo((1L << 20) + 2048);
    assertThat(
            OutputArchive.bound(new OutputLimits(OutputLimits.MAX_BYTES, OutputLimits.MAX_FILES)))
        .isLessThan(OutputLimits.MAX_BYTES + (32L << 20));
  }

  @Test
  void aStreamLongerThanTheBoundIsCutThereAndSaysSo() throws IOException {
    InputStream endless =
        new InputStream() {
          long served;

          @Override
          public int read() {
            served++;
            return 0;
          }

          @Override
          public int read(byte[] b, int off, int len) {
            served += len;
            return len;
          }
        };
    ByteArrayOutputStream staged = new ByteArrayOutputStream();
    assertThat(OutputArchive.copyAtMost(endless, staged, 100_000)).as("cut").isTrue();
    assertThat(staged.size()).isEqualTo(100_000);
  }

  @Test
  void aStreamWithinTheBoundIsCopiedWhole() throws IOException {
    for (int size : new int[] {0, 1, 65_536, 100_000}) {
      ByteArrayOutputStream staged = new ByteArrayOutputStream();
      boolean cut =
          OutputArchive.copyAtMost(new ByteArrayInputStream(new byte[size]), staged, 100_000);
      assertThat(cut).as(size + " bytes").isFalse();
      assertThat(staged.size()).isEqualTo(size);
    }
    ByteArrayOutputStream staged = new ByteArrayOutputStream();
    assertThat(
            OutputArchive.copyAtMost(new ByteArrayInputStream(new byte[100_001]), staged, 100_000))
        .as("one byte over")
        .isTrue();
    assertThat(staged.size()).isEqualTo(100_000);
  }
}
