package dev.agentsandbox.policy.config;

import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.HostName;
import dev.agentsandbox.policy.InvalidHostException;
import dev.agentsandbox.policy.http.RequestRule;
import dev.agentsandbox.policy.http.RequestRules;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;

/**
 * Reads the inspected hosts of an agent ({@code agents.NAME.inspect}) and of a proxy's policy
 * document ({@code inspect.hosts}): one entry per exact host name, each with optional {@code rules}
 * and an optional injected {@code credential} with its {@code header} and {@code template}. Every
 * problem is reported at its JSON path.
 */
final class InspectReader {
  private static final Set<String> ENTRY =
      SandboxConfigReader.orderedSet("rules", "credential", "header", "template");

  private InspectReader() {}

  /**
   * The entries of {@code value}. With {@code allow}, each host must be on it; with {@code
   * credentials}, each injected credential must be one of them.
   */
  static TreeMap<String, InspectedHost> hosts(
      TreeReader reader,
      String path,
      Object value,
      Optional<AllowList> allow,
      Optional<Set<String>> credentials) {
    TreeMap<String, InspectedHost> out = new TreeMap<>();
    if (value == null) {
      return out;
    }
    Map<String, Object> trees = reader.object(path, value);
    if (trees == null) {
      return out;
    }
    if (trees.size() > InspectedHost.MAX_PER_AGENT) {
      reader.problem(path, "at most " + InspectedHost.MAX_PER_AGENT + " inspected hosts");
      return out;
    }
    trees.forEach(
        (host, tree) -> {
          String at = TreeReader.field(path, host);
          if (!hostOk(reader, at, host, allow)) {
            return;
          }
          InspectedHost entry = entry(reader, at, host, tree, credentials);
          if (entry != null) {
            out.put(host, entry);
          }
        });
    return out;
  }

  private static boolean hostOk(
      TreeReader reader, String at, String host, Optional<AllowList> allow) {
    if (host.startsWith("*")) {
      reader.problem(
          at,
          "a wildcard is never inspected (the run's CA would sign for, and a credential go to,"
              + " every name under it): name each host");
      return false;
    }
    if (host.indexOf(':') >= 0) {
      reader.problem(
          at, "write the host name alone: inspection applies to the host on every allowed port");
      return false;
    }
    String canonical;
    try {
      canonical = HostName.canonicalTargetHost(host);
    } catch (InvalidHostException e) {
      reader.problem(at, e.getMessage());
      return false;
    }
    if (!canonical.equals(host)) {
      reader.problem(at, "write the host name as " + canonical);
      return false;
    }
    if (allow.isPresent()
        && allow.get().evaluate(host, 443) == AllowList.Verdict.HOST_NOT_ALLOWED
        && allow.get().evaluate(host, 80) == AllowList.Verdict.HOST_NOT_ALLOWED) {
      reader.problem(
          at, host + " is not on this agent's allow-list (only allowed hosts are inspected)");
      return false;
    }
    return true;
  }

  private static InspectedHost entry(
      TreeReader reader,
      String path,
      String host,
      Object value,
      Optional<Set<String>> credentials) {
    Map<String, Object> tree = reader.object(path, value);
    if (tree == null) {
      return null;
    }
    reader.onlyKeys(path, tree, ENTRY, Set.of());
    boolean ok = true;
    Optional<RequestRules> rules = Optional.empty();
    if (tree.get("rules") != null) {
      rules = rules(reader, TreeReader.field(path, "rules"), tree.get("rules"));
      ok = rules.isPresent();
    }
    Optional<Injection> inject = Optional.empty();
    String credentialPath = TreeReader.field(path, "credential");
    if (tree.get("credential") == null) {
      for (String field : List.of("header", "template")) {
        if (tree.get(field) != null) {
          reader.problem(
              TreeReader.field(path, field), "only an entry that injects a credential has one");
          ok = false;
        }
      }
    } else {
      String credential = reader.string(credentialPath, tree.get("credential"));
      String header = Injection.DEFAULT_HEADER;
      if (tree.get("header") != null) {
        header = reader.string(TreeReader.field(path, "header"), tree.get("header"));
      }
      String template = header == null ? null : Injection.defaultTemplate(header);
      if (tree.get("template") != null) {
        template = reader.string(TreeReader.field(path, "template"), tree.get("template"));
      }
      if (credential == null || header == null || template == null) {
        return null;
      }
      if (credentials.isPresent() && !credentials.get().contains(credential)) {
        reader.problem(
            credentialPath,
            "'"
                + TreeReader.echo(credential)
                + "' is not one of this agent's credentials (known: "
                + String.join(", ", new java.util.TreeSet<>(credentials.get()))
                + ")");
        ok = false;
      } else if (!CredentialSpec.NAME.matcher(credential).matches()) {
        reader.problem(credentialPath, "'" + TreeReader.echo(credential) + "' is not a name");
        ok = false;
      }
      Optional<String> headerProblem = Injection.headerProblem(header);
      if (headerProblem.isPresent()) {
        reader.problem(TreeReader.field(path, "header"), headerProblem.get());
        ok = false;
      }
      Optional<String> templateProblem = Injection.templateProblem(template);
      if (templateProblem.isPresent()) {
        reader.problem(TreeReader.field(path, "template"), templateProblem.get());
        ok = false;
      }
      if (ok) {
        inject = Optional.of(new Injection(credential, header, template));
      }
    }
    return ok ? new InspectedHost(host, rules, inject) : null;
  }

  private static Optional<RequestRules> rules(TreeReader reader, String path, Object value) {
    if (!(value instanceof List<?> list)) {
      reader.problem(
          path,
          "must be a list of rules (such as [\"GET,HEAD /repos/acme/**\"]), not "
              + TreeReader.kind(value));
      return Optional.empty();
    }
    if (list.size() > RequestRules.MAX_RULES) {
      reader.problem(path, "at most " + RequestRules.MAX_RULES + " rules");
      return Optional.empty();
    }
    List<RequestRule> rules = new ArrayList<>();
    boolean ok = true;
    for (int i = 0; i < list.size(); i++) {
      String at = TreeReader.index(path, i);
      String text = reader.string(at, list.get(i));
      if (text == null) {
        ok = false;
        continue;
      }
      try {
        rules.add(RequestRule.parse(text));
      } catch (IllegalArgumentException e) {
        reader.problem(at, e.getMessage());
        ok = false;
      }
    }
    return ok ? Optional.of(new RequestRules(rules)) : Optional.empty();
  }
}
