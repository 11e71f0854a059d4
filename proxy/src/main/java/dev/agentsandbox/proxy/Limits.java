package dev.agentsandbox.proxy;

import java.time.Duration;

/**
 * The proxy's resource limits; each hit is reported as a decision (or, for a tunnel that was
 * already allowed, as how it ended).
 *
 * @param connectTimeout how long a connect to the checked address may take
 * @param dnsTimeout how long resolving one name may take
 * @param idleTimeout how long a connection may carry no bytes in either direction
 * @param maxLifetime how long one tunnel or forwarded request may last in all
 * @param maxConnections how many client connections may be open at once
 * @param maxHeaderBytes the largest request head (request line plus headers) accepted
 * @param ioThreads event-loop threads; every connection is served by one of them
 */
public record Limits(
    Duration connectTimeout,
    Duration dnsTimeout,
    Duration idleTimeout,
    Duration maxLifetime,
    int maxConnections,
    int maxHeaderBytes,
    int ioThreads) {
  /** Defaults sized for one sandbox: a few agents' connections, not a data centre's. */
  public static final Limits DEFAULTS =
      new Limits(
          Duration.ofSeconds(10),
          Duration.ofSeconds(5),
          Duration.ofMinutes(5),
          Duration.ofHours(1),
          1024,
          16 * 1024,
          Math.min(2, Runtime.getRuntime().availableProcessors()));

  public Limits {
    positive("connect_timeout", connectTimeout);
    positive("dns_timeout", dnsTimeout);
    positive("idle_timeout", idleTimeout);
    positive("max_lifetime", maxLifetime);
    if (maxConnections < 1) {
      throw new InvalidProxyConfigException("limits.max_connections must be at least 1");
    }
    if (maxHeaderBytes < 1024 || maxHeaderBytes > 1024 * 1024) {
      throw new InvalidProxyConfigException("limits.max_header_bytes must be from 1024 to 1048576");
    }
    if (ioThreads < 1 || ioThreads > 64) {
      throw new InvalidProxyConfigException("limits.io_threads must be from 1 to 64");
    }
  }

  private static void positive(String name, Duration value) {
    if (value == null || value.isNegative() || value.isZero()) {
      throw new InvalidProxyConfigException("limits." + name + " must be a positive duration");
    }
  }
}
