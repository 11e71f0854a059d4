package dev.agentsandbox.relay;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLHandshakeException;
import javax.net.ssl.SSLSocket;

/**
 * The relay in a session's pod: it takes the step runner's one loopback connection, then listens on
 * the pod's address for the control plane, terminates mutual TLS (both certificates pinned, {@link
 * PinnedTls}) and, for the first connection that proves it holds the control plane's key, relays
 * bytes both ways, unchanged, until either end closes. It serves that one session once: every later
 * connection is closed unread, and when the session ends both sockets close (the runner then kills
 * its steps and exits, which ends the pod). What a refused peer sent never reaches the runner and
 * never reaches the log: the relay names the refusal from a closed set ({@link RelayRefusal}).
 *
 * <p>Thread-safety: {@link #start} then {@link #serve} on one thread; {@link #close} from any.
 */
public final class SessionRelay implements AutoCloseable {
  /** What the relay tells its log. Called from the relay's threads, one call at a time each. */
  public interface Events {
    /** Listening at {@code address}, presenting the certificate {@code pin} names. */
    void ready(CertificatePin pin, InetSocketAddress address);

    /** A connection was closed without relaying anything. */
    void refused(RelayRefusal refusal);

    /** The control plane's connection was accepted; bytes flow. */
    void started();

    /** The session's connection ended. */
    void ended(RelayEnd end);
  }

  /** The relay could not start; {@link #failure()} says why, from a closed set. */
  public static final class UnableToStartRelayException extends IOException {
    private static final long serialVersionUID = 1L;
    private final RelayFailure failure;

    UnableToStartRelayException(RelayFailure failure, String message, Throwable cause) {
      super(message, cause);
      this.failure = failure;
    }

    public RelayFailure failure() {
      return failure;
    }
  }

  /** At most this many handshakes at once; more are refused busy, not queued. */
  static final int MAX_HANDSHAKES = 4;

  private static final int TLS_HANDSHAKE_RECORD = 0x16;
  private static final int BUFFER = 64 * 1024 + 9;

  private final RelayOptions options;
  private final RelayIdentity identity;
  private final PinnedTls tls;
  private final Events events;
  private final Clock clock;
  private final AtomicBoolean taken = new AtomicBoolean();
  private final Semaphore handshakes = new Semaphore(MAX_HANDSHAKES);
  private final CountDownLatch sessionOver = new CountDownLatch(1);
  private volatile ServerSocket listener;
  private volatile Socket runner;
  private volatile boolean closed;

  public SessionRelay(RelayOptions options, RelayIdentity identity, Events events, Clock clock) {
    this.options = Objects.requireNonNull(options, "options");
    this.identity = Objects.requireNonNull(identity, "identity");
    this.events = Objects.requireNonNull(events, "events");
    this.clock = Objects.requireNonNull(clock, "clock");
    this.tls = PinnedTls.of(identity, options.clientPin(), clock);
  }

  /**
   * Connects to the runner (retrying until {@link RelayOptions#runnerTimeout()}: the relay starts
   * before the agent's container), then listens and announces it.
   */
  public void start() throws UnableToStartRelayException, InterruptedException {
    runner = connectRunner();
    try {
      ServerSocket socket = new ServerSocket();
      socket.bind(
          new InetSocketAddress(
              InetAddress.getByName(options.listenAddress()), options.listenPort()),
          16);
      listener = socket;
    } catch (IOException e) {
      closeQuietly(runner);
      throw new UnableToStartRelayException(
          RelayFailure.LISTEN_FAILED,
          "listening on "
              + options.listenAddress()
              + ":"
              + options.listenPort()
              + ": "
              + e.getMessage(),
          e);
    }
    events.ready(identity.pin(), (InetSocketAddress) listener.getLocalSocketAddress());
  }

  private Socket connectRunner() throws UnableToStartRelayException, InterruptedException {
    Instant until = clock.instant().plus(options.runnerTimeout());
    InetSocketAddress address =
        new InetSocketAddress(InetAddress.getLoopbackAddress(), options.runnerPort());
    IOException last = null;
    while (clock.instant().isBefore(until)) {
      Socket socket = new Socket();
      try {
        socket.setTcpNoDelay(true);
        socket.connect(address, 1000);
        return socket;
      } catch (IOException e) {
        last = e;
        closeQuietly(socket);
        Thread.sleep(100);
      }
    }
    throw new UnableToStartRelayException(
        RelayFailure.RUNNER_UNREACHABLE,
        "the step runner did not accept on "
            + address
            + " within "
            + options.runnerTimeout().toSeconds()
            + " s"
            + (last == null ? "" : ": " + last.getMessage()),
        last);
  }

  /** Accepts connections until {@link #close}: the first authenticated one is the session. */
  public void serve() {
    ServerSocket socket = listener;
    if (socket == null) {
      throw new IllegalStateException("serve() before start()");
    }
    while (!closed) {
      Socket accepted;
      try {
        accepted = socket.accept();
      } catch (IOException e) {
        if (closed) {
          return;
        }
        continue;
      }
      if (taken.get()) {
        refuse(accepted, RelayRefusal.SESSION_TAKEN);
      } else if (!handshakes.tryAcquire()) {
        refuse(accepted, RelayRefusal.BUSY);
      } else {
        Thread.ofVirtual()
            .name("relay-handshake")
            .start(
                () -> {
                  try {
                    handshake(accepted);
                  } finally {
                    handshakes.release();
                  }
                });
      }
    }
  }

  /** Waits for the session to have ended; for tests and the main's exit. */
  public boolean awaitSessionOver(Duration timeout) throws InterruptedException {
    return sessionOver.await(timeout.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
  }

  private void handshake(Socket accepted) {
    AtomicBoolean timedOut = new AtomicBoolean();
    AtomicBoolean done = new AtomicBoolean();
    Thread watchdog =
        Thread.ofVirtual()
            .start(
                () -> {
                  try {
                    Thread.sleep(options.handshakeTimeout());
                    if (!done.get()) {
                      timedOut.set(true);
                      closeQuietly(accepted);
                    }
                  } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                  }
                });
    SSLSocket session;
    try {
      accepted.setTcpNoDelay(true);
      accepted.setSoTimeout((int) options.handshakeTimeout().toMillis());
      InputStream in = accepted.getInputStream();
      int first = in.read();
      if (first != TLS_HANDSHAKE_RECORD) {
        done.set(true);
        refuse(
            accepted,
            first < 0 && timedOut.get() ? RelayRefusal.HANDSHAKE_TIMEOUT : RelayRefusal.NOT_TLS);
        return;
      }
      session = tls.server(accepted, new ByteArrayInputStream(new byte[] {(byte) first}));
      session.startHandshake();
      done.set(true);
    } catch (IOException e) {
      done.set(true);
      refuse(accepted, timedOut.get() ? RelayRefusal.HANDSHAKE_TIMEOUT : classify(e));
      return;
    } finally {
      watchdog.interrupt();
    }
    if (!taken.compareAndSet(false, true)) {
      refuse(session, RelayRefusal.SESSION_TAKEN);
      return;
    }
    try {
      session.setSoTimeout(0);
    } catch (SocketException e) {
      end(session, RelayEnd.IO_ERROR);
      return;
    }
    relay(session);
  }

  /** Which refusal a failed handshake was; a closed set, whatever the JDK's message says. */
  static RelayRefusal classify(IOException e) {
    for (Throwable cause = e; cause != null; cause = cause.getCause()) {
      if (cause instanceof UnpinnedCertificateException) {
        return RelayRefusal.CERTIFICATE_NOT_PINNED;
      }
      if (cause instanceof java.net.SocketTimeoutException) {
        return RelayRefusal.HANDSHAKE_TIMEOUT;
      }
    }
    String message = String.valueOf(e.getMessage());
    if (e instanceof SSLHandshakeException && message.contains("Empty client certificate chain")) {
      return RelayRefusal.NO_CLIENT_CERTIFICATE;
    }
    if (e instanceof SSLHandshakeException
        && (message.contains("protocol_version")
            || message.contains("protocol is not")
            || message.contains("requested protocol"))) {
      return RelayRefusal.PROTOCOL_VERSION;
    }
    return RelayRefusal.HANDSHAKE_FAILED;
  }

  private void relay(SSLSocket client) {
    events.started();
    Socket toRunner = runner;
    AtomicReference<RelayEnd> end = new AtomicReference<>();
    CountDownLatch first = new CountDownLatch(1);
    Thread up =
        Thread.ofPlatform()
            .daemon()
            .name("relay-to-runner")
            .start(() -> pump(client, toRunner, true, end, first));
    Thread down =
        Thread.ofPlatform()
            .daemon()
            .name("relay-from-runner")
            .start(() -> pump(toRunner, client, false, end, first));
    try {
      first.await();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      end.compareAndSet(null, RelayEnd.IO_ERROR);
    }
    // Either end gone: both close, so the runner sees the end of its stream and stops.
    closeQuietly(client);
    closeQuietly(toRunner);
    try {
      up.join(5000);
      down.join(5000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    events.ended(end.get());
    sessionOver.countDown();
  }

  private static void pump(
      Socket from,
      Socket to,
      boolean fromClient,
      AtomicReference<RelayEnd> end,
      CountDownLatch first) {
    RelayEnd why;
    byte[] buffer = new byte[BUFFER];
    try {
      InputStream in = from.getInputStream();
      OutputStream out = to.getOutputStream();
      int n;
      while ((n = in.read(buffer)) > 0) {
        out.write(buffer, 0, n);
        out.flush();
      }
      why = fromClient ? RelayEnd.CLIENT_CLOSED : RelayEnd.RUNNER_CLOSED;
    } catch (SSLException e) {
      // A record that fails its MAC (changed, replayed, reordered): its bytes were never returned.
      why = fromClient ? RelayEnd.RECORD_REFUSED : RelayEnd.IO_ERROR;
    } catch (IOException e) {
      why = RelayEnd.IO_ERROR;
    }
    end.compareAndSet(null, why);
    first.countDown();
  }

  private void end(Socket session, RelayEnd why) {
    closeQuietly(session);
    closeQuietly(runner);
    events.ended(why);
    sessionOver.countDown();
  }

  private void refuse(Socket socket, RelayRefusal why) {
    closeQuietly(socket);
    events.refused(why);
  }

  /** Stops listening and closes the session's sockets, if any. */
  @Override
  public void close() {
    closed = true;
    closeQuietly(listener);
    closeQuietly(runner);
  }

  private static void closeQuietly(java.io.Closeable closeable) {
    if (closeable == null) {
      return;
    }
    try {
      closeable.close();
    } catch (IOException e) {
      // Closing a socket that is gone; nothing to report.
    }
  }
}
