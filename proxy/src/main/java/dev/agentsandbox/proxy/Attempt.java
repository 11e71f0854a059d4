package dev.agentsandbox.proxy;

import dev.agentsandbox.policy.event.DecisionRecord;
import dev.agentsandbox.policy.net.Reason;
import java.time.Instant;
import java.util.concurrent.TimeUnit;

/**
 * One connection attempt (a tunnel or one forwarded request) while it is being served: the facts
 * its decision record will carry. Confined to the client channel's event loop; reported once.
 */
final class Attempt {
  private final ProxyContext context;
  private final String client;
  private final String method;
  private final Instant time = Instant.now();
  private final long startNanos = System.nanoTime();
  private String host;
  private int port;
  private String address;
  private long bytesUp;
  private long bytesDown;
  private String end;
  private String path;
  private Integer status;
  private String credential;
  private boolean reported;

  Attempt(ProxyContext context, String client, String method, String host, int port) {
    this.context = context;
    this.client = client;
    this.method = method;
    this.host = host;
    this.port = port;
  }

  String host() {
    return host;
  }

  int port() {
    return port;
  }

  void target(String canonicalHost, int targetPort) {
    this.host = canonicalHost;
    this.port = targetPort;
  }

  void address(String checked) {
    this.address = checked;
  }

  String address() {
    return address;
  }

  /** On an inspected host: the request's normalised path, query dropped. */
  void path(String normalised) {
    this.path = normalised;
  }

  /** On an inspected host: the status the upstream answered. */
  void status(int code) {
    this.status = code;
  }

  /** On an inspected host: the name (never the value) of the credential the proxy set. */
  void credential(String name) {
    this.credential = name;
  }

  void countUp(long bytes) {
    bytesUp += bytes;
  }

  void countDown(long bytes) {
    bytesDown += bytes;
  }

  /** Records how an allowed attempt ended; the first cause wins (a timeout, then the close). */
  void endedBy(String cause) {
    if (end == null) {
      end = cause;
    }
  }

  boolean reported() {
    return reported;
  }

  /** Reports a refusal (at most once per attempt). */
  void deny(Reason reason, String detail) {
    report(reason, detail);
  }

  /** Reports the allowed attempt as ended (at most once per attempt). */
  void allowEnded() {
    endedBy("client-closed");
    report(Reason.ALLOWED, null);
  }

  private void report(Reason reason, String detail) {
    if (reported) {
      return;
    }
    reported = true;
    long durationMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNanos);
    context
        .decisions()
        .report(
            new DecisionRecord(
                time,
                context.runId(),
                client,
                method,
                host,
                port,
                reason == Reason.ALLOWED,
                reason,
                address,
                bytesUp,
                bytesDown,
                durationMs,
                false,
                reason == Reason.ALLOWED ? end : null,
                detail,
                path,
                reason == Reason.ALLOWED ? status : null,
                credential));
  }
}
