package dev.agentsandbox.policy.http;

import dev.agentsandbox.policy.net.Reason;
import java.util.List;
import java.util.Optional;

/**
 * What an inspected host allows: a request passes when some rule allows its method on its
 * normalised path; anything else is refused. An empty list allows nothing. Immutable and
 * thread-safe.
 *
 * @param rules the rules, in the order written
 */
public record RequestRules(List<RequestRule> rules) {
  /** The most rules one inspected host may have. */
  public static final int MAX_RULES = 64;

  public RequestRules {
    rules = List.copyOf(new java.util.LinkedHashSet<>(rules));
    if (rules.size() > MAX_RULES) {
      throw new IllegalArgumentException("at most " + MAX_RULES + " rules");
    }
  }

  /**
   * The verdict on a request: empty when allowed, else {@link Reason#METHOD_NOT_ALLOWED} (no rule
   * names the method at all, or it is no {@link Method}) or {@link Reason#PATH_NOT_ALLOWED} (rules
   * name the method, none on this path).
   */
  public Optional<Reason> refusal(String methodToken, List<String> path) {
    Optional<Method> method = Method.of(methodToken);
    if (method.isEmpty()) {
      return Optional.of(Reason.METHOD_NOT_ALLOWED);
    }
    boolean named = false;
    for (RequestRule rule : rules) {
      if (rule.methods().contains(method.get())) {
        if (rule.path().matches(path)) {
          return Optional.empty();
        }
        named = true;
      }
    }
    return Optional.of(named ? Reason.PATH_NOT_ALLOWED : Reason.METHOD_NOT_ALLOWED);
  }

  /**
   * Whether every request {@code rule} allows is allowed by this list: each of its methods by some
   * rule of this list with that method whose pattern covers the rule's. (A union of patterns can
   * cover more than each alone only through literals this check cannot enumerate, so it may call a
   * harmless rule a widening, never a widening harmless.)
   */
  public boolean covers(RequestRule rule) {
    for (Method method : rule.methods()) {
      boolean covered = false;
      for (RequestRule mine : rules) {
        if (mine.methods().contains(method) && mine.path().covers(rule.path())) {
          covered = true;
          break;
        }
      }
      if (!covered) {
        return false;
      }
    }
    return true;
  }

  /** The rules as an operator writes them. */
  public List<String> asStrings() {
    return rules.stream().map(RequestRule::toString).toList();
  }
}
