package dev.agentsandbox.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class HeadReaderTest {

  /** Hands out at most {@code chunk} bytes per read, like a socket with small segments. */
  private static InputStream trickle(String text, int chunk) {
    return new ByteArrayInputStream(text.getBytes(StandardCharsets.ISO_8859_1)) {
      @Override
      public synchronized int read(byte[] b, int off, int len) {
        return super.read(b, off, Math.min(len, chunk));
      }
    };
  }

  @Test
  void splitsKeepAliveResponsesAcrossReadBoundaries() throws IOException {
    String two =
        "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
            + "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nbye";
    for (int chunk = 1; chunk <= two.length(); chunk++) {
      HeadReader reader = new HeadReader(trickle(two, chunk));

      assertThat(reader.readHead()).isEqualTo("HTTP/1.1 200 OK\r\nContent-Length: 5");
      reader.skip(5);
      assertThat(reader.readHead()).isEqualTo("HTTP/1.1 200 OK\r\nContent-Length: 3");
      reader.skip(3);
      assertThat(reader.readHead()).as("chunk %d", chunk).isNull();
    }
  }

  @Test
  void leavesTunnelBytesAfterTheHeadBuffered() throws IOException {
    HeadReader reader = new HeadReader(trickle("HTTP/1.1 200 OK\r\n\r\nextra", 4096));

    assertThat(reader.readHead()).isEqualTo("HTTP/1.1 200 OK");
    assertThat(reader.buffered()).isEqualTo(5);
  }

  @Test
  void aStreamThatEndsInsideAHeadIsAnError() {
    HeadReader reader = new HeadReader(trickle("HTTP/1.1 200 OK\r\nVia: x", 3));

    assertThatThrownBy(reader::readHead).isInstanceOf(EOFException.class);
  }

  @Test
  void growsForAHeadLongerThanTheInitialBuffer() throws IOException {
    String longHeader = "X-Long: " + "a".repeat(20_000);
    HeadReader reader =
        new HeadReader(trickle("HTTP/1.1 200 OK\r\n" + longHeader + "\r\n\r\n", 1500));

    assertThat(reader.readHead()).endsWith(longHeader);
  }
}
