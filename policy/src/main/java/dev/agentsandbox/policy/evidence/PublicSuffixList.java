package dev.agentsandbox.policy.evidence;

import com.google.common.net.InternetDomainName;
import java.util.Optional;

/**
 * The Public Suffix List (publicsuffix.org, both its ICANN and its private sections, as Guava's
 * {@link InternetDomainName} ships it): where a registrable domain begins, so that a proposed
 * wildcard never covers names that different owners registered ({@code *.com}, {@code *.github.io},
 * {@code *.co.uk}).
 *
 * <p>A name whose top-level label the list does not know ({@code .test}, {@code .internal}, {@code
 * .local}) gets the list's own default rule, {@code *}: its last label is the public suffix. Guava
 * has no default rule, so it is applied here. A name Guava refuses to read has no registrable
 * domain, so no wildcard is ever formed over it.
 *
 * <p>Stateless and thread-safe. The only class of {@code policy} that loads Guava (an optional
 * dependency: docs/architecture.md says why).
 */
public final class PublicSuffixList {
  private PublicSuffixList() {}

  /**
   * The registrable domain {@code name} is at or under (one label below its public suffix), or
   * empty when {@code name} is itself a public suffix or cannot be read.
   *
   * @param name a canonical host name (lower case, no trailing dot)
   */
  public static Optional<String> registrableDomain(String name) {
    InternetDomainName parsed;
    try {
      parsed = InternetDomainName.from(name);
    } catch (IllegalArgumentException unreadable) {
      return Optional.empty();
    }
    if (parsed.isUnderPublicSuffix()) {
      return Optional.of(parsed.topPrivateDomain().toString());
    }
    if (parsed.hasPublicSuffix()) {
      // The name is itself a public suffix: nothing under it belongs to one owner.
      return Optional.empty();
    }
    // No rule matched: the list's default rule "*" makes the last label the public suffix.
    int lastDot = name.lastIndexOf('.');
    if (lastDot < 0) {
      return Optional.empty();
    }
    int secondLastDot = name.lastIndexOf('.', lastDot - 1);
    return Optional.of(name.substring(secondLastDot + 1));
  }

  /**
   * Whether {@code *.suffix} may be proposed: {@code suffix} is a registrable domain or a name
   * under one, so everything the wildcard covers belongs to the one owner who registered it.
   */
  public static boolean wildcardAllowedOver(String suffix) {
    return registrableDomain(suffix).isPresent();
  }
}
