package dev.agentsandbox.server.http;

import dev.agentsandbox.policy.text.Bounded;

/** Bounds untrusted text before it goes into a message or a log: the server's limit and escape. */
public final class Echo {
  private static final int LIMIT = 120;

  private Echo() {}

  /**
   * The text, cut at {@value #LIMIT} characters, with control characters replaced ({@link
   * Bounded.Escape#CONTROL}); empty for {@code null}.
   */
  public static String bounded(String text) {
    return Bounded.text(text, LIMIT, Bounded.Escape.CONTROL);
  }
}
