package dev.agentsandbox.policy.net;

import java.net.InetAddress;
import java.util.ArrayList;
import java.util.List;

/**
 * The internal destinations one proxy honours (an LLM gateway, a package mirror), each with its
 * ports: an allowed name may resolve into one of them although it is not public, and only on that
 * destination's ports. Known metadata addresses and the proxy's own socket stay refused whatever is
 * declared; {@link InternalRule} says what a declaration may not cover.
 *
 * <p>Immutable and thread-safe.
 *
 * @param rules the declared destinations, validated
 */
public record InternalRanges(List<InternalRule> rules) {
  /** No internal destinations. */
  public static final InternalRanges NONE = new InternalRanges(List.of());

  public InternalRanges {
    rules = List.copyOf(rules);
  }

  /**
   * Parses range rules as the proxy's {@code --internal-cidr} takes them, {@code CIDR:PORT[,PORT]}.
   *
   * @throws IllegalArgumentException naming the first bad rule and why
   */
  public static InternalRanges parse(List<String> texts) {
    List<InternalRule> parsed = new ArrayList<>(texts.size());
    for (String text : texts) {
      parsed.add(InternalRule.parseRange(text));
    }
    return new InternalRanges(parsed);
  }

  /**
   * Whether a declared destination permits connecting to the address on the port, for a target
   * named {@code host}. The caller has already unmapped the address ({@link
   * AddressClassifier#unmapped}) and classified it, once per connection attempt.
   */
  public boolean permits(String host, InetAddress plain, AddressClass addressClass, int port) {
    for (InternalRule rule : rules) {
      if (rule.permits(host, plain, addressClass, port)) {
        return true;
      }
    }
    return false;
  }

  /** The rules as a person writes them, {@code CIDR:PORTS} or {@code HOST:PORTS}. */
  public List<String> asStrings() {
    return rules.stream().map(InternalRule::toString).toList();
  }
}
