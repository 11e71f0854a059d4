package dev.agentsandbox.proxy;

/** Bounded, printable echoes of untrusted input for refusal bodies, decisions and logs. */
final class Echo {
  private static final int LIMIT = 80;

  private Echo() {}

  static String of(String raw) {
    if (raw == null) {
      return "";
    }
    StringBuilder out = new StringBuilder(Math.min(raw.length(), LIMIT) + 3);
    for (int i = 0; i < raw.length() && out.length() < LIMIT; i++) {
      char c = raw.charAt(i);
      out.append(c >= 0x20 && c < 0x7f ? c : '?');
    }
    return raw.length() > LIMIT ? out + "..." : out.toString();
  }
}
