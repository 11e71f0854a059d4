package dev.agentsandbox.policy;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * An ordered, duplicate-free list of {@link AllowEntry entries}. An empty list allows nothing.
 *
 * <p>Immutable and thread-safe.
 */
public record AllowList(List<AllowEntry> entries) {
  /** What the list says about one (host, port). */
  public enum Verdict {
    /** Some entry allows the host on the port. */
    ALLOWED,
    /** No entry names the host at all. */
    HOST_NOT_ALLOWED,
    /** An entry names the host, but none allows this port. */
    PORT_NOT_ALLOWED
  }

  /** The list that allows nothing. */
  public static final AllowList EMPTY = new AllowList(List.of());

  public AllowList {
    entries = List.copyOf(new LinkedHashSet<>(entries));
  }

  /**
   * Parses entries as an administrator writes them.
   *
   * @throws InvalidHostException for the first entry that does not parse
   */
  public static AllowList parse(List<String> raw) {
    List<AllowEntry> parsed = new ArrayList<>(raw.size());
    for (String entry : raw) {
      parsed.add(AllowEntry.parse(entry));
    }
    return new AllowList(parsed);
  }

  /** What this list says about a canonical host name and port. */
  public Verdict evaluate(String canonicalHost, int port) {
    boolean hostNamed = false;
    for (AllowEntry entry : entries) {
      if (entry.matchesHost(canonicalHost)) {
        if (entry.allowsPort(port)) {
          return Verdict.ALLOWED;
        }
        hostNamed = true;
      }
    }
    return hostNamed ? Verdict.PORT_NOT_ALLOWED : Verdict.HOST_NOT_ALLOWED;
  }

  /**
   * Whether every (host, port) the entry allows is allowed by this list. An entry without a port is
   * also covered by two entries of this list, one for port 80 and one for 443.
   */
  public boolean covers(AllowEntry entry) {
    for (AllowEntry mine : entries) {
      if (entry.within(mine)) {
        return true;
      }
    }
    if (entry.hasPort()) {
      return false;
    }
    return covers(new AllowEntry(entry.wildcard(), entry.domain(), 80))
        && covers(new AllowEntry(entry.wildcard(), entry.domain(), 443));
  }

  /**
   * The list allowing exactly what both lists allow: each pair's {@link AllowEntry#intersect
   * intersection}, minus entries another result already covers.
   */
  public AllowList intersect(AllowList other) {
    Set<AllowEntry> pieces = new LinkedHashSet<>();
    for (AllowEntry mine : entries) {
      for (AllowEntry theirs : other.entries) {
        mine.intersect(theirs).ifPresent(pieces::add);
      }
    }
    List<AllowEntry> kept = new ArrayList<>();
    for (AllowEntry piece : pieces) {
      boolean redundant = false;
      for (AllowEntry rival : pieces) {
        if (!rival.equals(piece) && piece.within(rival)) {
          redundant = true;
          break;
        }
      }
      if (!redundant) {
        kept.add(piece);
      }
    }
    return new AllowList(kept);
  }

  /** The entries as an administrator writes them. */
  public List<String> asStrings() {
    return entries.stream().map(AllowEntry::toString).toList();
  }
}
