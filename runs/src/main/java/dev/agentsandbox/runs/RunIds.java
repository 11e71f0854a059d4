package dev.agentsandbox.runs;

import java.security.SecureRandom;
import java.util.regex.Pattern;

/**
 * Run ids: 20 characters of lower-case base32 (100 random bits), valid in Docker names, Kubernetes
 * namespace names ({@code agent-run-<id>}) and label values alike.
 */
public final class RunIds {
  private static final char[] ALPHABET = "abcdefghijklmnopqrstuvwxyz234567".toCharArray();
  private static final Pattern VALID = Pattern.compile("[a-z0-9]{1,32}");
  private static final SecureRandom RANDOM = new SecureRandom();

  private RunIds() {}

  /** A new random run id. */
  public static String next() {
    char[] id = new char[20];
    for (int i = 0; i < id.length; i++) {
      id[i] = ALPHABET[RANDOM.nextInt(ALPHABET.length)];
    }
    return new String(id);
  }

  /** Whether the text could be a run id; anything else is never looked up. */
  public static boolean valid(String text) {
    return text != null && VALID.matcher(text).matches();
  }

  /** The id as it may appear in a message: untrusted input is bounded and never echoed raw. */
  static String shown(String text) {
    return valid(text) ? text : "(malformed id)";
  }
}
