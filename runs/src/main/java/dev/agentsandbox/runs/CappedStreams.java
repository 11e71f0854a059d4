package dev.agentsandbox.runs;

import java.io.FilterInputStream;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;

/** The streams a session's file operations are counted and capped with. */
final class CappedStreams {
  private CappedStreams() {}

  /** Counts what the backend reads of a body. */
  static final class CountingInput extends FilterInputStream {
    long count;

    CountingInput(InputStream in) {
      super(in);
    }

    @Override
    public int read() throws IOException {
      int b = super.read();
      if (b >= 0) {
        count++;
      }
      return b;
    }

    @Override
    public int read(byte[] buffer, int offset, int length) throws IOException {
      int n = super.read(buffer, offset, length);
      if (n > 0) {
        count += n;
      }
      return n;
    }
  }

  /** Stops a copy one byte past its cap. */
  static final class BoundedOutput extends FilterOutputStream {
    /** Thrown once more than the cap was offered. */
    static final class Over extends IOException {
      private static final long serialVersionUID = 1L;
    }

    private final long cap;
    private long written;

    BoundedOutput(OutputStream out, long cap) {
      super(out);
      this.cap = cap;
    }

    @Override
    public void write(int b) throws IOException {
      write(new byte[] {(byte) b}, 0, 1);
    }

    @Override
    public void write(byte[] buffer, int offset, int length) throws IOException {
      if (written + length > cap) {
        throw new Over();
      }
      written += length;
      out.write(buffer, offset, length);
    }
  }
}
