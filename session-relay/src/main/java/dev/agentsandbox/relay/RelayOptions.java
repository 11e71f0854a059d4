package dev.agentsandbox.relay;

import dev.agentsandbox.policy.text.Bounded;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * How one relay runs, from its command line (the pod spec's {@code args}).
 *
 * @param listenAddress the IP literal it listens on: the pod's own address (the kubelet expands it
 *     from the downward API), never a name to resolve
 * @param listenPort the port the control plane connects to, and the only one the pod's ingress
 *     policy opens
 * @param runnerPort the loopback port the step runner listens on for its one connection
 * @param clientPin the control plane's certificate for this session, the only one accepted
 * @param runId the run, named in the relay's certificate
 * @param expiresAt the run's expiry: the relay's certificate expires then
 * @param runnerTimeout how long the relay tries to reach the runner before it gives up
 * @param handshakeTimeout how long one connection has to finish its TLS handshake
 */
public record RelayOptions(
    String listenAddress,
    int listenPort,
    int runnerPort,
    CertificatePin clientPin,
    String runId,
    Instant expiresAt,
    Duration runnerTimeout,
    Duration handshakeTimeout) {
  /** The command line, as {@code --help} and a usage error print it. */
  public static final String USAGE =
      "usage: session-relay --listen-address IP --listen-port N --runner-port N"
          + " --client-sha256 HEX --run-id ID --expires-at EPOCH-SECONDS"
          + " [--runner-timeout-seconds N] [--handshake-timeout-seconds N]";

  private static final Pattern IP_LITERAL =
      Pattern.compile("[0-9.]+|[0-9a-fA-F:.]*:[0-9a-fA-F:.]*");
  private static final Pattern RUN_ID = Pattern.compile("[a-z0-9]{1,32}");

  public RelayOptions {
    Objects.requireNonNull(listenAddress, "listenAddress");
    if (!IP_LITERAL.matcher(listenAddress).matches()) {
      throw new IllegalArgumentException(
          "--listen-address must be an IP address (the pod's), not " + bounded(listenAddress));
    }
    port("--listen-port", listenPort);
    port("--runner-port", runnerPort);
    if (listenPort == runnerPort) {
      throw new IllegalArgumentException("--listen-port and --runner-port must differ");
    }
    Objects.requireNonNull(clientPin, "clientPin");
    Objects.requireNonNull(runId, "runId");
    if (!RUN_ID.matcher(runId).matches()) {
      throw new IllegalArgumentException("--run-id must be 1-32 lower-case letters or digits");
    }
    Objects.requireNonNull(expiresAt, "expiresAt");
    positive("--runner-timeout-seconds", runnerTimeout);
    positive("--handshake-timeout-seconds", handshakeTimeout);
  }

  /**
   * Reads the command line.
   *
   * @throws IllegalArgumentException naming the first thing wrong with it
   */
  public static RelayOptions parse(String... args) {
    String address = null;
    String runId = null;
    String pin = null;
    Integer listenPort = null;
    Integer runnerPort = null;
    Long expiresAt = null;
    long runnerSeconds = 120;
    long handshakeSeconds = 10;
    List<String> seen = new ArrayList<>();
    for (int i = 0; i < args.length; i += 2) {
      String option = args[i];
      if (seen.contains(option)) {
        throw new IllegalArgumentException(bounded(option) + " is given twice");
      }
      seen.add(option);
      if (i + 1 >= args.length) {
        throw new IllegalArgumentException(bounded(option) + " needs a value");
      }
      String value = args[i + 1];
      switch (option) {
        case "--listen-address" -> address = value;
        case "--listen-port" -> listenPort = (int) number(option, value, 65535);
        case "--runner-port" -> runnerPort = (int) number(option, value, 65535);
        case "--client-sha256" -> pin = value;
        case "--run-id" -> runId = value;
        case "--expires-at" -> expiresAt = number(option, value, Long.MAX_VALUE / 1000);
        case "--runner-timeout-seconds" -> runnerSeconds = number(option, value, 86400);
        case "--handshake-timeout-seconds" -> handshakeSeconds = number(option, value, 3600);
        default -> throw new IllegalArgumentException("unknown option " + bounded(option));
      }
    }
    return new RelayOptions(
        required("--listen-address", address),
        required("--listen-port", listenPort),
        required("--runner-port", runnerPort),
        new CertificatePin(required("--client-sha256", pin)),
        required("--run-id", runId),
        Instant.ofEpochSecond(required("--expires-at", expiresAt)),
        Duration.ofSeconds(runnerSeconds),
        Duration.ofSeconds(handshakeSeconds));
  }

  private static <T> T required(String option, T value) {
    if (value == null) {
      throw new IllegalArgumentException(option + " is required");
    }
    return value;
  }

  private static long number(String option, String value, long max) {
    try {
      long n = Long.parseLong(value);
      if (n < 0 || n > max) {
        throw new IllegalArgumentException(option + " is out of range: " + bounded(value));
      }
      return n;
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(option + " must be a whole number, not " + bounded(value));
    }
  }

  private static void port(String option, int port) {
    if (port < 1 || port > 65535) {
      throw new IllegalArgumentException(option + " must be 1 to 65535, not " + port);
    }
  }

  private static void positive(String option, Duration duration) {
    Objects.requireNonNull(duration, option);
    if (duration.isNegative() || duration.isZero()) {
      throw new IllegalArgumentException(option + " must be positive");
    }
  }

  private static String bounded(String text) {
    return Bounded.text(text, 80, Bounded.Escape.PRINTABLE_ASCII);
  }
}
