package dev.agentsandbox.policy.config;

import dev.agentsandbox.policy.AllowEntry;
import dev.agentsandbox.policy.AllowList;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;

/**
 * Computes every loosening between two versions of a document. What counts is in {@link
 * Loosening.Kind}; everything else (removing an agent or an entry, narrowing a wildcard, lowering a
 * cap, turning sandboxes off, changing an image) is not a loosening.
 *
 * <p>Stateless and thread-safe.
 */
public final class Loosenings {
  private Loosenings() {}

  /** Every loosening from {@code before} to {@code after}, in document order; empty if none. */
  public static List<Loosening> between(SandboxConfig before, SandboxConfig after) {
    List<Loosening> found = new ArrayList<>();
    if (!before.enabled() && after.enabled()) {
      found.add(
          new Loosening("enabled", Loosening.Kind.ENABLED_TURNED_ON, "agent sandboxes turned on"));
    }
    if (after.backend().strength() < before.backend().strength()) {
      found.add(
          new Loosening(
              "backend",
              Loosening.Kind.BACKEND_WEAKENED,
              before.backend().wireName()
                  + " -> "
                  + after.backend().wireName()
                  + " moves to weaker isolation"));
    }
    if (before.requireRuntimeClass() && !after.requireRuntimeClass()) {
      found.add(
          new Loosening(
              "require_runtime_class",
              Loosening.Kind.RUNTIME_CLASS_NOT_REQUIRED,
              "the gVisor RuntimeClass is no longer required"));
    }
    InternalWidest wasWidest = before.internalWidest();
    InternalWidest isWidest = after.internalWidest();
    if (isWidest.ipv4Prefix() < wasWidest.ipv4Prefix()
        || isWidest.ipv6Prefix() < wasWidest.ipv6Prefix()) {
      found.add(
          new Loosening(
              "internal_widest",
              Loosening.Kind.INTERNAL_WIDEST_RAISED,
              "internal ranges may cover up to /"
                  + isWidest.ipv4Prefix()
                  + " and /"
                  + isWidest.ipv6Prefix()
                  + " per agent (was /"
                  + wasWidest.ipv4Prefix()
                  + " and /"
                  + wasWidest.ipv6Prefix()
                  + ")"));
    }
    for (Map.Entry<String, AgentSettings> entry : after.agents().entrySet()) {
      String path = TreeReader.field("agents", entry.getKey());
      AgentSettings was = before.agents().get(entry.getKey());
      if (was == null) {
        found.add(new Loosening(path, Loosening.Kind.AGENT_ADDED, "agent added"));
      } else {
        agent(found, path, was, entry.getValue());
      }
    }
    return List.copyOf(found);
  }

  /** Every loosening from {@code before} to {@code after}, in document order; empty if none. */
  public static List<Loosening> between(EgressPolicy before, EgressPolicy after) {
    List<Loosening> found = new ArrayList<>();
    rule(found, "default", before.defaultRule(), after.defaultRule(), "");
    // A scope named on either side is compared through ruleFor, so removing a scope that falls
    // back to a wider default is caught as well as editing it.
    TreeSet<String> names = new TreeSet<>(before.scopes().keySet());
    names.addAll(after.scopes().keySet());
    for (String name : names) {
      String note = after.scopes().containsKey(name) ? "" : " (now under the default rule)";
      rule(
          found, TreeReader.field("scopes", name), before.ruleFor(name), after.ruleFor(name), note);
    }
    return List.copyOf(found);
  }

  private static void agent(
      List<Loosening> found, String path, AgentSettings was, AgentSettings is) {
    allowList(found, TreeReader.field(path, "allow"), was.allow(), is.allow(), "");
    if (!was.scope().equals(is.scope())) {
      found.add(
          new Loosening(
              TreeReader.field(path, "scope"),
              Loosening.Kind.SCOPE_CHANGED,
              "scope " + was.scope() + " -> " + is.scope() + " changes the egress policy applied"));
    }
    if (is.ttlSeconds() > was.ttlSeconds()) {
      found.add(
          new Loosening(
              TreeReader.field(path, "ttl_seconds"),
              Loosening.Kind.TTL_RAISED,
              "raised from " + was.ttlSeconds() + " to " + is.ttlSeconds()));
    }
    String resources = TreeReader.field(path, "resources");
    if (is.resources().cpus() > was.resources().cpus()) {
      raised(found, resources, "cpus", was.resources().cpus(), is.resources().cpus());
    }
    if (is.resources().memoryMb() > was.resources().memoryMb()) {
      raised(found, resources, "memory_mb", was.resources().memoryMb(), is.resources().memoryMb());
    }
    if (is.resources().pids() > was.resources().pids()) {
      raised(found, resources, "pids", was.resources().pids(), is.resources().pids());
    }
    credentials(found, TreeReader.field(path, "credentials"), was, is);
    internal(found, TreeReader.field(path, "internal"), was, is);
    inspect(found, path, was, is);
    String outputs = TreeReader.field(path, "outputs");
    if (is.outputs().maxBytes() > was.outputs().maxBytes()) {
      found.add(
          new Loosening(
              TreeReader.field(outputs, "max_bytes"),
              Loosening.Kind.OUTPUTS_RAISED,
              "raised from " + was.outputs().maxBytes() + " to " + is.outputs().maxBytes()));
    }
    if (is.outputs().maxFiles() > was.outputs().maxFiles()) {
      found.add(
          new Loosening(
              TreeReader.field(outputs, "max_files"),
              Loosening.Kind.OUTPUTS_RAISED,
              "raised from " + was.outputs().maxFiles() + " to " + is.outputs().maxFiles()));
    }
    if (is.warm() > was.warm()) {
      found.add(
          new Loosening(
              TreeReader.field(path, "warm"),
              Loosening.Kind.WARM_RAISED,
              "raised from " + was.warm() + " to " + is.warm()));
    }
    String sessions = TreeReader.field(path, "sessions");
    if (is.sessions().maxFileBytes() > was.sessions().maxFileBytes()) {
      found.add(
          new Loosening(
              TreeReader.field(sessions, "max_file_bytes"),
              Loosening.Kind.SESSION_LIMIT_RAISED,
              "raised from "
                  + was.sessions().maxFileBytes()
                  + " to "
                  + is.sessions().maxFileBytes()));
    }
    if (is.sessions().maxStdinBytes() > was.sessions().maxStdinBytes()) {
      found.add(
          new Loosening(
              TreeReader.field(sessions, "max_stdin_bytes"),
              Loosening.Kind.SESSION_LIMIT_RAISED,
              "raised from "
                  + was.sessions().maxStdinBytes()
                  + " to "
                  + is.sessions().maxStdinBytes()));
    }
  }

  /**
   * A credential added, or one whose source, command or audience changed (each can mint something
   * more powerful or for another verifier), or newly delivered in the environment. Its life needs
   * no rule of its own: every credential expires at the run's deadline, so a longer life is a
   * raised {@code ttl_seconds}.
   */
  private static void credentials(
      List<Loosening> found, String path, AgentSettings was, AgentSettings is) {
    is.credentials()
        .forEach(
            (name, spec) -> {
              String at = TreeReader.field(path, name);
              CredentialSpec old = was.credentials().get(name);
              if (old == null) {
                found.add(
                    new Loosening(
                        at,
                        Loosening.Kind.CREDENTIAL_ADDED,
                        spec.source().wireName() + " credential added"));
                return;
              }
              if (old.source() != spec.source()
                  || !old.command().equals(spec.command())
                  || !old.audience().equals(spec.audience())) {
                found.add(
                    new Loosening(
                        at,
                        Loosening.Kind.CREDENTIAL_WIDENED,
                        describe(old) + " -> " + describe(spec)));
              }
              if (old.env().isEmpty() && spec.env().isPresent()) {
                found.add(
                    new Loosening(
                        TreeReader.field(at, "env"),
                        Loosening.Kind.CREDENTIAL_IN_ENV,
                        "now also in the environment as " + spec.env().get()));
              }
            });
  }

  /**
   * A destination added (also under a new name: a rename is judged as what it lets runs reach), one
   * that covers more than before (a range not inside the former one, a range turned service or
   * back, another namespace or host, a pod selector that is not at least as narrow), or a port
   * added to what the proxy dials or to what the NetworkPolicy opens on the pods.
   */
  private static void internal(
      List<Loosening> found, String path, AgentSettings was, AgentSettings is) {
    is.internal()
        .forEach(
            (name, now) -> {
              String at = TreeReader.field(path, name);
              InternalDestination old = was.internal().get(name);
              if (old == null) {
                found.add(
                    new Loosening(
                        at,
                        Loosening.Kind.INTERNAL_DESTINATION_ADDED,
                        "internal destination " + now.rule() + " added"));
                return;
              }
              if (!covers(old, now)) {
                found.add(
                    new Loosening(
                        at,
                        Loosening.Kind.INTERNAL_DESTINATION_WIDENED,
                        describe(old) + " -> " + describe(now)));
              }
              TreeSet<Integer> added = new TreeSet<>(now.ports());
              added.removeAll(old.ports());
              TreeSet<Integer> podAdded = new TreeSet<>(now.podPorts());
              podAdded.removeAll(old.podPorts());
              if (!added.isEmpty() || !podAdded.isEmpty()) {
                found.add(
                    new Loosening(
                        TreeReader.field(at, "ports"),
                        Loosening.Kind.INTERNAL_PORT_ADDED,
                        "now also on port "
                            + (added.isEmpty() ? podAdded : added)
                            + (added.isEmpty() ? " of its pods" : "")));
              }
            });
  }

  /**
   * Inspected hosts: rules removed from a host that stays allowed, a rule that allows more than the
   * former rules, a credential newly set on a host's requests (a new injection, or another
   * credential), its header or template changed, and a credential the proxy held now given to the
   * workload. A host inspected for the first time, or given rules, only narrows what passes.
   */
  private static void inspect(
      List<Loosening> found, String agentPath, AgentSettings was, AgentSettings is) {
    String path = TreeReader.field(agentPath, "inspect");
    java.util.TreeSet<String> hosts = new java.util.TreeSet<>(was.inspect().keySet());
    hosts.addAll(is.inspect().keySet());
    for (String host : hosts) {
      String at = TreeReader.field(path, host);
      Optional<InspectedHost> old = Optional.ofNullable(was.inspect().get(host));
      Optional<InspectedHost> now = Optional.ofNullable(is.inspect().get(host));
      Optional<dev.agentsandbox.policy.http.RequestRules> oldRules =
          old.flatMap(InspectedHost::rules);
      Optional<dev.agentsandbox.policy.http.RequestRules> newRules =
          now.flatMap(InspectedHost::rules);
      boolean stillAllowed =
          is.allow().evaluate(host, 443) != AllowList.Verdict.HOST_NOT_ALLOWED
              || is.allow().evaluate(host, 80) != AllowList.Verdict.HOST_NOT_ALLOWED;
      if (oldRules.isPresent() && newRules.isEmpty() && stillAllowed) {
        found.add(
            new Loosening(
                now.isPresent() ? TreeReader.field(at, "rules") : at,
                Loosening.Kind.INSPECTION_RULES_REMOVED,
                host + " is no longer held to " + oldRules.get().asStrings()));
      } else if (oldRules.isPresent() && newRules.isPresent()) {
        List<dev.agentsandbox.policy.http.RequestRule> rules = newRules.get().rules();
        for (int i = 0; i < rules.size(); i++) {
          if (!oldRules.get().covers(rules.get(i))) {
            found.add(
                new Loosening(
                    TreeReader.index(TreeReader.field(at, "rules"), i),
                    Loosening.Kind.INSPECTION_RULE_WIDENED,
                    rules.get(i) + " allows more than " + oldRules.get().asStrings()));
          }
        }
      }
      Optional<Injection> oldInject = old.flatMap(InspectedHost::inject);
      Optional<Injection> newInject = now.flatMap(InspectedHost::inject);
      if (newInject.isPresent()) {
        Injection n = newInject.get();
        if (oldInject.isEmpty() || !oldInject.get().credential().equals(n.credential())) {
          found.add(
              new Loosening(
                  TreeReader.field(at, "credential"),
                  Loosening.Kind.INJECTION_ADDED,
                  "credential "
                      + n.credential()
                      + " now set as "
                      + n.header()
                      + " on every request to "
                      + host));
        } else if (!oldInject.get().header().equalsIgnoreCase(n.header())
            || !oldInject.get().template().equals(n.template())) {
          found.add(
              new Loosening(
                  TreeReader.field(at, "header"),
                  Loosening.Kind.INJECTION_CHANGED,
                  oldInject.get().header()
                      + ": "
                      + oldInject.get().template()
                      + " -> "
                      + n.header()
                      + ": "
                      + n.template()));
        }
      }
    }
    java.util.SortedSet<String> held = is.proxyHeldCredentials();
    for (String name : was.proxyHeldCredentials()) {
      if (is.credentials().containsKey(name) && !held.contains(name)) {
        found.add(
            new Loosening(
                TreeReader.field(TreeReader.field(agentPath, "credentials"), name),
                Loosening.Kind.CREDENTIAL_TO_WORKLOAD,
                "credential "
                    + name
                    + " is no longer held by the proxy: the workload gets its value"));
      }
    }
  }

  /** Whether {@code old} reaches at least every address {@code now} does (ports aside). */
  private static boolean covers(InternalDestination old, InternalDestination now) {
    if (old.cidr().isPresent() && now.cidr().isPresent()) {
      var outer = old.cidr().get();
      var inner = now.cidr().get();
      return inner.isIpv6() == outer.isIpv6()
          && inner.prefixLength() >= outer.prefixLength()
          && outer.contains(inner.network());
    }
    if (old.service().isPresent() && now.service().isPresent()) {
      var o = old.service().get();
      var n = now.service().get();
      // More labels select fewer pods: the new selector must keep every former label.
      return o.namespace().equals(n.namespace())
          && o.host().equals(n.host())
          && n.podLabels().entrySet().containsAll(o.podLabels().entrySet());
    }
    return false;
  }

  private static String describe(InternalDestination destination) {
    return destination
        .service()
        .map(s -> "service " + s.host() + " (pods " + s.podLabels() + " in " + s.namespace() + ")")
        .orElseGet(() -> "range " + destination.cidr().orElseThrow());
  }

  private static String describe(CredentialSpec spec) {
    return spec.source().wireName()
        + spec.command().map(c -> " command " + c).orElse("")
        + spec.audience().map(a -> " for audience " + a).orElse("");
  }

  private static void raised(
      List<Loosening> found, String resources, String name, Number was, Number is) {
    found.add(
        new Loosening(
            TreeReader.field(resources, name),
            Loosening.Kind.RESOURCE_RAISED,
            "raised from " + was + " to " + is));
  }

  private static void rule(
      List<Loosening> found, String path, ScopeRule was, ScopeRule is, String note) {
    if (was.unrestricted()) {
      return;
    }
    Optional<AllowList> list = is.allow();
    if (list.isEmpty()) {
      found.add(
          new Loosening(
              path, Loosening.Kind.EGRESS_UNRESTRICTED, "egress became unrestricted" + note));
      return;
    }
    allowList(found, TreeReader.field(path, "allow"), was.allow().orElseThrow(), list.get(), note);
  }

  private static void allowList(
      List<Loosening> found, String path, AllowList was, AllowList is, String note) {
    List<AllowEntry> entries = is.entries();
    for (int i = 0; i < entries.size(); i++) {
      AllowEntry entry = entries.get(i);
      if (was.covers(entry)) {
        continue;
      }
      // Overlap is judged on hosts alone, so a port added to a former host counts as widening it.
      AllowEntry hosts = new AllowEntry(entry.wildcard(), entry.domain(), AllowEntry.DEFAULT_PORTS);
      Optional<AllowEntry> overlapped =
          was.entries().stream()
              .filter(
                  old ->
                      new AllowEntry(old.wildcard(), old.domain(), AllowEntry.DEFAULT_PORTS)
                          .intersect(hosts)
                          .isPresent())
              .findFirst();
      String at = TreeReader.index(path, i);
      if (overlapped.isPresent()) {
        found.add(
            new Loosening(
                at,
                Loosening.Kind.ALLOW_ENTRY_WIDENED,
                entry + " allows more than " + overlapped.get() + note));
      } else {
        found.add(new Loosening(at, Loosening.Kind.ALLOW_ENTRY_ADDED, entry + " added" + note));
      }
    }
  }
}
