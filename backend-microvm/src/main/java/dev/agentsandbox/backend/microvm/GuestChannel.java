package dev.agentsandbox.backend.microvm;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * The host's end of one virtio-serial port: a Unix socket the VMM connects to when it starts, owned
 * by the VMM's uid and readable by no one else. Everything the guest writes to the port is handed
 * to a consumer, in order, from one thread; {@link #send} writes to the guest. Thread-safe.
 */
final class GuestChannel implements AutoCloseable {
  private final ServerSocketChannel server;
  private final Path path;
  private final CountDownLatch ended = new CountDownLatch(1);
  private volatile SocketChannel connection;

  private GuestChannel(ServerSocketChannel server, Path path) {
    this.server = server;
    this.path = path;
  }

  /** Listens on {@code path}, owned by {@code uid} with mode 0600. */
  static GuestChannel listen(Path path, int uid, Consumer<byte[]> sink, String threadName)
      throws IOException {
    return listen(path, uid, sink, () -> {}, threadName);
  }

  /**
   * Listens on {@code path}, owned by {@code uid} with mode 0600; {@code onEnd} runs on the
   * channel's thread once the stream has ended (the VMM exited or teardown closed it).
   */
  static GuestChannel listen(
      Path path, int uid, Consumer<byte[]> sink, Runnable onEnd, String threadName)
      throws IOException {
    Files.deleteIfExists(path);
    ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
    server.bind(UnixDomainSocketAddress.of(path));
    Files.setPosixFilePermissions(
        path, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
    Files.setAttribute(path, "unix:uid", uid);
    GuestChannel channel = new GuestChannel(server, path);
    Thread.ofPlatform()
        .daemon()
        .name(threadName)
        .start(
            () -> {
              try {
                channel.pump(sink);
              } finally {
                onEnd.run();
              }
            });
    return channel;
  }

  private void pump(Consumer<byte[]> sink) {
    try (SocketChannel accepted = server.accept()) {
      connection = accepted;
      ByteBuffer buffer = ByteBuffer.allocate(16 * 1024);
      while (accepted.read(buffer) >= 0) {
        buffer.flip();
        if (buffer.hasRemaining()) {
          byte[] chunk = new byte[buffer.remaining()];
          buffer.get(chunk);
          sink.accept(chunk);
        }
        buffer.clear();
      }
    } catch (IOException e) {
      // Closed by teardown, or the VMM went away: either way the stream has ended.
    } finally {
      ended.countDown();
    }
  }

  /**
   * Writes {@code bytes} to the guest's end of the port, if the VMM has connected; the guest reads
   * them once it opens the port. Returns whether they were written.
   */
  boolean send(byte[] bytes) {
    SocketChannel open = connection;
    if (open == null) {
      return false;
    }
    try {
      synchronized (this) {
        ByteBuffer buffer = ByteBuffer.wrap(bytes);
        while (buffer.hasRemaining()) {
          open.write(buffer);
        }
      }
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  /** Waits until the VMM closed its end (it exited) or the time ran out. */
  boolean awaitEnd(long millis) throws InterruptedException {
    return ended.await(millis, TimeUnit.MILLISECONDS);
  }

  @Override
  public void close() {
    try {
      server.close();
      SocketChannel open = connection;
      if (open != null) {
        open.close();
      }
      Files.deleteIfExists(path);
    } catch (IOException e) {
      // Nothing to recover: the run's directory is removed next.
    }
  }
}
