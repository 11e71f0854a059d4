package dev.agentsandbox.cli;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.LoggerContext;
import java.util.List;
import org.slf4j.ILoggerFactory;
import org.slf4j.LoggerFactory;

/**
 * Keeps the bytes the control plane sends to the Docker daemon out of its log, whatever logging
 * configuration an operator supplies. The run's credentials travel to the daemon in those bytes (a
 * tar copied into the run's credentials volume, and the container's environment for credentials
 * delivered as variables), and Apache HttpClient, docker-java's transport, logs every byte on the
 * wire at DEBUG. Turning the root logger to DEBUG to chase a problem must not write credentials to
 * disk, so {@code serve} switches these loggers off after the configuration is read.
 */
final class WireLogs {
  /** HttpClient 5's loggers of raw bytes and of header lines. */
  static final List<String> LOGGERS =
      List.of("org.apache.hc.client5.http.wire", "org.apache.hc.client5.http.headers");

  private WireLogs() {}

  /** Switches the wire loggers off; a logging back end other than logback is left alone. */
  static void silence() {
    silence(LoggerFactory.getILoggerFactory());
  }

  static void silence(ILoggerFactory factory) {
    if (factory instanceof LoggerContext context) {
      for (String name : LOGGERS) {
        context.getLogger(name).setLevel(Level.OFF);
      }
    }
  }
}
