package dev.agentsandbox.relay;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.time.Clock;
import java.time.Duration;
import java.util.Objects;
import javax.net.ssl.SSLSocket;

/**
 * The control plane's end of a session's channel: a TLS 1.3 connection to the relay in the
 * session's pod that presents this session's certificate and accepts only the relay's pinned one,
 * carrying the step runner's frames both ways. What arrives is handed to a {@link Receiver} from
 * one reader thread, in order; the receiver (the step runner's client) trusts none of it.
 *
 * <p>Thread-safety: {@link #write} may be called from any thread (whole frames, one at a time);
 * {@link #close} from any thread, once or more.
 */
public final class RelayChannel implements AutoCloseable {
  /** Where the channel's bytes go. */
  public interface Receiver {
    /** Bytes from the runner, in order, from the channel's one reader thread. */
    void receive(byte[] bytes, int offset, int length);

    /** The channel ended, and why (the relay closed it, a read failed, or it was closed here). */
    void ended(String why);
  }

  private final SSLSocket socket;
  private final OutputStream out;
  private final Object writing = new Object();
  private volatile boolean closed;

  private RelayChannel(SSLSocket socket) throws IOException {
    this.socket = socket;
    this.out = socket.getOutputStream();
  }

  /**
   * Connects to a session's relay and completes the handshake within {@code timeout}.
   *
   * @param address the pod's address and the relay's port
   * @param own this session's control-plane identity, whose pin the relay was started with
   * @param relay the relay's certificate, as its ready line named it
   * @param label what the session is called in the reader thread's name and messages
   * @throws IOException when the connection or the handshake failed; a relay presenting any other
   *     certificate fails it ({@link UnpinnedCertificateException} in the cause chain)
   */
  public static RelayChannel connect(
      InetSocketAddress address,
      RelayIdentity own,
      CertificatePin relay,
      Clock clock,
      Duration timeout,
      Receiver receiver,
      String label)
      throws IOException {
    Objects.requireNonNull(receiver, "receiver");
    SSLSocket socket = PinnedTls.of(own, relay, clock).connect(address, timeout);
    RelayChannel channel = new RelayChannel(socket);
    Thread.ofPlatform().daemon().name("relay-channel-" + label).start(() -> channel.read(receiver));
    return channel;
  }

  private void read(Receiver receiver) {
    String why;
    byte[] buffer = new byte[64 * 1024];
    try {
      InputStream in = socket.getInputStream();
      int n;
      while ((n = in.read(buffer)) > 0) {
        receiver.receive(buffer, 0, n);
      }
      why = "the session relay closed the channel";
    } catch (IOException e) {
      why =
          closed
              ? "the channel was closed by the control plane"
              : "reading from the session relay failed: " + e.getMessage();
    }
    closeQuietly();
    receiver.ended(why);
  }

  /** Writes one whole frame and flushes it: it leaves as one or more authenticated records. */
  public void write(byte[] frame) throws IOException {
    synchronized (writing) {
      if (closed) {
        throw new IOException("the session's channel is closed");
      }
      out.write(frame);
      out.flush();
    }
  }

  /** Whether the channel is still open. */
  public boolean isOpen() {
    return !closed && !socket.isClosed();
  }

  @Override
  public void close() {
    closeQuietly();
  }

  private void closeQuietly() {
    closed = true;
    try {
      socket.close();
    } catch (IOException e) {
      // The connection is gone either way.
    }
  }
}
