package dev.agentsandbox.policy.config;

import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/** Reads {@link EgressPolicy} documents; see {@link EgressPolicy#read}. */
final class EgressPolicyReader {
  /** How a document says "no restriction" for a scope or the default. */
  static final String UNRESTRICTED = "unrestricted";

  private static final Set<String> TOP = SandboxConfigReader.orderedSet("scopes", "default");
  private static final Set<String> RULE = SandboxConfigReader.orderedSet("allow", UNRESTRICTED);

  private EgressPolicyReader() {}

  static EgressPolicy read(Object tree) {
    TreeReader reader = new TreeReader();
    Map<String, Object> doc = reader.object("", tree);
    if (doc == null) {
      throw reader.failure();
    }
    reader.onlyKeys("", doc, TOP, Set.of("updated_at", "updated_by"));
    TreeMap<String, ScopeRule> scopes = new TreeMap<>();
    Object scopesValue = doc.get("scopes");
    if (scopesValue != null) {
      Map<String, Object> scopeTrees = reader.object("scopes", scopesValue);
      if (scopeTrees != null) {
        scopeTrees.forEach(
            (name, ruleTree) -> {
              String path = TreeReader.field("scopes", name);
              boolean nameOk = reader.checkName(path, name);
              ScopeRule rule = rule(reader, path, ruleTree);
              if (nameOk && rule != null) {
                scopes.put(name, rule);
              }
            });
      }
    }
    ScopeRule defaultRule = ScopeRule.UNRESTRICTED;
    if (doc.get("default") != null) {
      ScopeRule rule = rule(reader, "default", doc.get("default"));
      if (rule != null) {
        defaultRule = rule;
      }
    }
    reader.throwIfAny();
    return new EgressPolicy(scopes, defaultRule);
  }

  /** {@code "unrestricted"}, {@code {"unrestricted": true}} or {@code {"allow": [...]}}. */
  private static ScopeRule rule(TreeReader reader, String path, Object value) {
    if (UNRESTRICTED.equals(value)) {
      return ScopeRule.UNRESTRICTED;
    }
    if (!(value instanceof Map<?, ?>)) {
      reader.problem(
          path, "must be \"unrestricted\" or {\"allow\": [...]}, not " + TreeReader.kind(value));
      return null;
    }
    Map<String, Object> tree = reader.object(path, value);
    reader.onlyKeys(path, tree, RULE, Set.of());
    boolean hasAllow = tree.containsKey("allow");
    Object unrestricted = tree.get(UNRESTRICTED);
    if (unrestricted != null) {
      String flagPath = TreeReader.field(path, UNRESTRICTED);
      if (!Boolean.TRUE.equals(unrestricted)) {
        reader.problem(
            flagPath, "may only be true (write {\"allow\": [...]} to restrict the scope)");
        return null;
      }
      if (hasAllow) {
        reader.problem(path, "give either allow or unrestricted, not both");
        return null;
      }
      return ScopeRule.UNRESTRICTED;
    }
    if (!hasAllow) {
      reader.problem(path, "needs allow (a list, possibly empty) or \"unrestricted\"");
      return null;
    }
    return ScopeRule.of(reader.allowList(TreeReader.field(path, "allow"), tree.get("allow")));
  }
}
