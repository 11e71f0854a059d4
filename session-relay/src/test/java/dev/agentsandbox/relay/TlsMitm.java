package dev.agentsandbox.relay;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.function.BooleanSupplier;
import org.awaitility.Awaitility;

/**
 * A node-network attacker on loopback: a forwarder between a client and a relay that reads the
 * client's side as TLS records and can record them, change a byte of the next one, or send the next
 * one a second time once a condition holds. It cannot decrypt anything; it only does what an
 * observer on the pod network could.
 */
final class TlsMitm implements AutoCloseable {
  enum Mode {
    PASS,
    FLIP_NEXT,
    DUPLICATE_NEXT
  }

  private final ServerSocket listener;
  private final InetSocketAddress target;
  private final ByteArrayOutputStream recorded = new ByteArrayOutputStream();
  private volatile Mode mode = Mode.PASS;
  private volatile BooleanSupplier beforeDuplicate = () -> true;
  private volatile int touched;

  TlsMitm(InetSocketAddress target) throws IOException {
    this.target = target;
    this.listener = new ServerSocket(0, 4, InetAddress.getLoopbackAddress());
    Thread.ofPlatform().daemon().start(this::accept);
  }

  InetSocketAddress address() {
    return new InetSocketAddress(InetAddress.getLoopbackAddress(), listener.getLocalPort());
  }

  void flipNext() {
    mode = Mode.FLIP_NEXT;
  }

  /** Sends the next record again once {@code when} holds (checked for up to 30 s). */
  void duplicateNext(BooleanSupplier when) {
    beforeDuplicate = when;
    mode = Mode.DUPLICATE_NEXT;
  }

  /** How many records it changed or sent twice. */
  int touched() {
    return touched;
  }

  /** Every byte the client sent, in order. */
  synchronized byte[] recorded() {
    return recorded.toByteArray();
  }

  private void accept() {
    try {
      while (true) {
        Socket client = listener.accept();
        Socket server = new Socket();
        server.connect(target, 5000);
        Thread.ofPlatform().daemon().start(() -> records(client, server));
        Thread.ofPlatform().daemon().start(() -> copy(server, client));
      }
    } catch (IOException e) {
      // Closed.
    }
  }

  private void records(Socket client, Socket server) {
    try {
      DataInputStream in = new DataInputStream(client.getInputStream());
      OutputStream out = server.getOutputStream();
      while (true) {
        byte[] header = new byte[5];
        in.readFully(header);
        int length = (header[3] & 0xff) << 8 | (header[4] & 0xff);
        byte[] body = new byte[length];
        in.readFully(body);
        synchronized (this) {
          recorded.writeBytes(header);
          recorded.writeBytes(body);
        }
        Mode now = mode;
        if (now == Mode.FLIP_NEXT && header[0] == 0x17) {
          mode = Mode.PASS;
          body[body.length / 2] ^= 0x01;
          touched++;
        }
        out.write(header);
        out.write(body);
        out.flush();
        if (now == Mode.DUPLICATE_NEXT && header[0] == 0x17) {
          mode = Mode.PASS;
          Awaitility.await("before the duplicate")
              .atMost(java.time.Duration.ofSeconds(30))
              .until(beforeDuplicate::getAsBoolean);
          touched++;
          out.write(header);
          out.write(body);
          out.flush();
        }
      }
    } catch (EOFException e) {
      // The client closed.
    } catch (IOException | RuntimeException e) {
      // Either side closed.
    } finally {
      closeQuietly(client);
      closeQuietly(server);
    }
  }

  private static void copy(Socket from, Socket to) {
    try {
      InputStream in = from.getInputStream();
      OutputStream out = to.getOutputStream();
      in.transferTo(out);
    } catch (IOException e) {
      // Either side closed.
    } finally {
      closeQuietly(from);
      closeQuietly(to);
    }
  }

  private static void closeQuietly(Socket socket) {
    try {
      socket.close();
    } catch (IOException e) {
      // Gone.
    }
  }

  @Override
  public void close() throws IOException {
    listener.close();
  }
}
