package dev.agentsandbox.policy.evidence;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeSet;

/**
 * Where refused names earn a wildcard: {@code *.suffix} only when at least {@link #MIN_NAMES}
 * distinct names strictly under {@code suffix} were refused, the deepest such suffix first (so
 * {@code *.cdn.example.com} before {@code *.example.com}), and never over a public suffix ({@link
 * PublicSuffixList#wildcardAllowedOver}): names that different owners registered never share one.
 * Stateless.
 */
final class Wildcards {
  /** "Several": fewer distinct names stay exact entries. */
  static final int MIN_NAMES = 3;

  private Wildcards() {}

  /** One wildcard and the names it covers. */
  record Cover(String suffix, SortedSet<String> names) {}

  /** The wildcards for these canonical names; names no wildcard covers are left to the caller. */
  static List<Cover> plan(Collection<String> names) {
    Map<String, Set<String>> under = new HashMap<>();
    for (String name : names) {
      for (int dot = name.indexOf('.'); dot >= 0; dot = name.indexOf('.', dot + 1)) {
        under.computeIfAbsent(name.substring(dot + 1), k -> new HashSet<>()).add(name);
      }
    }
    List<String> suffixes = new ArrayList<>(under.keySet());
    suffixes.sort(
        Comparator.comparingInt(Wildcards::labels)
            .reversed()
            .thenComparing(Comparator.naturalOrder()));
    Set<String> covered = new HashSet<>();
    List<Cover> covers = new ArrayList<>();
    for (String suffix : suffixes) {
      SortedSet<String> uncovered = new TreeSet<>(under.get(suffix));
      uncovered.removeAll(covered);
      if (uncovered.size() < MIN_NAMES) {
        continue;
      }
      // The guard: *.com, *.co.uk and *.github.io would each cover names of many owners.
      if (!PublicSuffixList.wildcardAllowedOver(suffix)) {
        continue;
      }
      covers.add(new Cover(suffix, uncovered));
      covered.addAll(uncovered);
    }
    return covers;
  }

  private static int labels(String name) {
    int labels = 1;
    for (int i = 0; i < name.length(); i++) {
      if (name.charAt(i) == '.') {
        labels++;
      }
    }
    return labels;
  }
}
