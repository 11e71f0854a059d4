package dev.agentsandbox.bench;

import java.util.Locale;

/** The forward proxies the harness compares. */
enum ProxyKind {
  AGENT_SANDBOX,
  SQUID,
  TINYPROXY;

  /** The name used on the command line and in the report. */
  String label() {
    return name().toLowerCase(Locale.ROOT).replace('_', '-');
  }

  static ProxyKind fromLabel(String label) {
    for (ProxyKind kind : values()) {
      if (kind.label().equals(label)) {
        return kind;
      }
    }
    throw new IllegalArgumentException(
        "unknown proxy " + label + " (expected agent-sandbox, squid or tinyproxy)");
  }
}
