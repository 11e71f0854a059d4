package dev.agentsandbox.policy.net;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * Step 6 of the proxy's rules as a pure function: given the answers a resolver returned for an
 * allowed name, which one (if any) may be dialled.
 *
 * <p>Order of checks for one address and port:
 *
 * <ol>
 *   <li>a known metadata address is refused, even inside a declared internal range;
 *   <li>the proxy's own listening socket is refused (a loop), even inside a declared range; with a
 *       wildcard listen address that is any of the host's addresses or loopback on that port;
 *   <li>an address a declared internal destination permits on this port is permitted (a range that
 *       holds it, or a service rule for the target's name) — this is how an operator reaches a
 *       gateway on the proxy's own host, including a loopback address it declared explicitly; on
 *       any other port the address is judged like any other;
 *   <li>one of the proxy host's own interface addresses is refused on any port;
 *   <li>otherwise only {@link AddressClass#PUBLIC} addresses are permitted.
 * </ol>
 *
 * <p>Immutable and thread-safe.
 *
 * @param internal the declared internal destinations, each with its ports
 * @param hostAddresses the proxy host's own interface addresses, enumerated by the caller
 * @param listener the proxy's own listening socket (its address may be the wildcard)
 */
public record AddressPolicy(
    InternalRanges internal, Set<InetAddress> hostAddresses, InetSocketAddress listener) {
  public AddressPolicy {
    if (internal == null || listener == null || listener.getAddress() == null) {
      throw new IllegalArgumentException("internal ranges and a resolved listener are required");
    }
    hostAddresses = Set.copyOf(hostAddresses.stream().map(AddressClassifier::unmapped).toList());
  }

  /** The verdict on one address for a connection to {@code host:port}. */
  public AddressCheck check(String host, InetAddress address, int port) {
    InetAddress plain = AddressClassifier.unmapped(address);
    AddressClass addressClass = AddressClassifier.classify(address);
    if (addressClass == AddressClass.METADATA) {
      return new AddressCheck(address, AddressClass.METADATA, false, false);
    }
    if (isListener(plain, addressClass, port)) {
      return new AddressCheck(address, AddressClass.PROXY_LISTENER, false, false);
    }
    if (internal.permits(host, plain, addressClass, port)) {
      return new AddressCheck(address, addressClass, true, true);
    }
    if (hostAddresses.contains(plain)) {
      return new AddressCheck(address, AddressClass.PROXY_HOST, false, false);
    }
    return new AddressCheck(address, addressClass, addressClass == AddressClass.PUBLIC, false);
  }

  /**
   * Checks every answer in order and picks the first permitted one; a refused answer is never
   * chosen, whatever its position.
   */
  public Choice choose(String host, List<InetAddress> answers, int port) {
    List<AddressCheck> checks = new ArrayList<>(answers.size());
    AddressCheck chosen = null;
    for (InetAddress answer : answers) {
      AddressCheck check = check(host, answer, port);
      checks.add(check);
      if (chosen == null && check.permitted()) {
        chosen = check;
      }
    }
    return new Choice(Optional.ofNullable(chosen), checks);
  }

  private boolean isListener(InetAddress plain, AddressClass addressClass, int port) {
    if (port != listener.getPort()) {
      return false;
    }
    InetAddress bound = AddressClassifier.unmapped(listener.getAddress());
    if (bound.isAnyLocalAddress()) {
      return hostAddresses.contains(plain)
          || addressClass == AddressClass.LOOPBACK
          || addressClass == AddressClass.UNSPECIFIED;
    }
    return IpLiteral.sameBytes(bound, plain)
        || (bound.isLoopbackAddress() && addressClass == AddressClass.UNSPECIFIED);
  }

  /**
   * The outcome of checking all answers.
   *
   * @param chosen the permitted address to dial, if any
   * @param checks the verdict on every answer, in the resolver's order
   */
  public record Choice(Optional<AddressCheck> chosen, List<AddressCheck> checks) {
    public Choice {
      checks = List.copyOf(checks);
    }

    /** The first refused answer, which explains a refusal. */
    public Optional<AddressCheck> firstRefused() {
      return checks.stream().filter(check -> !check.permitted()).findFirst();
    }
  }
}
