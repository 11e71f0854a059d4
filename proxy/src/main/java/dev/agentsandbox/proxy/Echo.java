package dev.agentsandbox.proxy;

import dev.agentsandbox.policy.text.Bounded;

/**
 * Bounded, printable echoes of untrusted input for refusal bodies, decisions and logs: the proxy's
 * limit, and printable ASCII only ({@link Bounded.Escape#PRINTABLE_ASCII}).
 */
final class Echo {
  private static final int LIMIT = 80;

  private Echo() {}

  static String of(String raw) {
    return Bounded.text(raw, LIMIT, Bounded.Escape.PRINTABLE_ASCII);
  }
}
