package dev.agentsandbox.policy.config;

import dev.agentsandbox.policy.AllowList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * The agent sandbox configuration: whether sandboxes are on, which backend runs them, and each
 * agent's settings. Immutable; agents are kept sorted by name so that documents compare and hash
 * the same however they were written.
 *
 * @param enabled whether agent sandboxes are on at all
 * @param backend the backend asked for
 * @param requireRuntimeClass refuse to run on Kubernetes without the gVisor RuntimeClass
 * @param internalWidest how much address space one agent's internal ranges may cover
 * @param agents settings per agent name
 */
public record SandboxConfig(
    boolean enabled,
    Backend backend,
    boolean requireRuntimeClass,
    InternalWidest internalWidest,
    SortedMap<String, AgentSettings> agents) {

  /** The configuration in force before anyone configured anything: off, no agents. */
  public static final SandboxConfig DEFAULT =
      new SandboxConfig(false, Backend.AUTO, false, InternalWidest.DEFAULT, new TreeMap<>());

  public SandboxConfig {
    Objects.requireNonNull(backend, "backend");
    Objects.requireNonNull(internalWidest, "internalWidest");
    agents = Collections.unmodifiableSortedMap(new TreeMap<>(agents));
  }

  /** A configuration with the default {@link InternalWidest}. */
  public SandboxConfig(
      boolean enabled,
      Backend backend,
      boolean requireRuntimeClass,
      SortedMap<String, AgentSettings> agents) {
    this(enabled, backend, requireRuntimeClass, InternalWidest.DEFAULT, agents);
  }

  /**
   * Reads a document parsed from JSON into plain Java values ({@code Map}, {@code List}, {@code
   * String}, {@code Number}, {@code Boolean}, {@code null}).
   *
   * @throws InvalidConfigException with every problem found, each at its JSON path
   */
  public static SandboxConfig read(Object tree) {
    return SandboxConfigReader.read(tree);
  }

  /** The document as plain Java values, with every default written out. */
  public Map<String, Object> toTree() {
    Map<String, Object> tree = new LinkedHashMap<>();
    tree.put("enabled", enabled);
    tree.put("backend", backend.wireName());
    tree.put("require_runtime_class", requireRuntimeClass);
    Map<String, Object> widest = new LinkedHashMap<>();
    widest.put("ipv4", internalWidest.ipv4Prefix());
    widest.put("ipv6", internalWidest.ipv6Prefix());
    tree.put("internal_widest", widest);
    Map<String, Object> agentTrees = new LinkedHashMap<>();
    agents.forEach((name, agent) -> agentTrees.put(name, agentTree(agent)));
    tree.put("agents", agentTrees);
    return tree;
  }

  static Map<String, Object> agentTree(AgentSettings agent) {
    Map<String, Object> tree = new LinkedHashMap<>();
    tree.put("allow", agent.allow().asStrings());
    tree.put("image", agent.image());
    tree.put("scope", agent.scope());
    tree.put("ttl_seconds", agent.ttlSeconds());
    Map<String, Object> resources = new LinkedHashMap<>();
    resources.put("cpus", agent.resources().cpus());
    resources.put("memory_mb", agent.resources().memoryMb());
    resources.put("pids", agent.resources().pids());
    tree.put("resources", resources);
    Map<String, Object> credentials = new LinkedHashMap<>();
    agent
        .credentials()
        .forEach(
            (name, spec) -> {
              Map<String, Object> c = new LinkedHashMap<>();
              c.put("source", spec.source().wireName());
              spec.audience().ifPresent(a -> c.put("audience", a));
              spec.command().ifPresent(a -> c.put("command", a));
              spec.env().ifPresent(a -> c.put("env", a));
              credentials.put(name, c);
            });
    tree.put("credentials", credentials);
    Map<String, Object> outputs = new LinkedHashMap<>();
    outputs.put("max_bytes", agent.outputs().maxBytes());
    outputs.put("max_files", agent.outputs().maxFiles());
    tree.put("outputs", outputs);
    Map<String, Object> internal = new LinkedHashMap<>();
    agent.internal().forEach((name, destination) -> internal.put(name, internalTree(destination)));
    tree.put("internal", internal);
    tree.put("warm", agent.warm());
    Map<String, Object> inspect = new LinkedHashMap<>();
    agent.inspect().forEach((host, entry) -> inspect.put(host, entry.toTree()));
    tree.put("inspect", inspect);
    Map<String, Object> sessions = new LinkedHashMap<>();
    sessions.put("max_file_bytes", agent.sessions().maxFileBytes());
    sessions.put("max_stdin_bytes", agent.sessions().maxStdinBytes());
    tree.put("sessions", sessions);
    return tree;
  }

  private static Map<String, Object> internalTree(InternalDestination destination) {
    Map<String, Object> tree = new LinkedHashMap<>();
    destination.cidr().ifPresent(cidr -> tree.put("cidr", cidr.toString()));
    destination
        .service()
        .ifPresent(
            service -> {
              Map<String, Object> s = new LinkedHashMap<>();
              s.put("namespace", service.namespace());
              s.put("pod_labels", service.podLabels());
              s.put("host", service.host());
              if (!service.podPorts().isEmpty()) {
                s.put("pod_ports", List.copyOf(service.podPorts()));
              }
              tree.put("service", s);
            });
    tree.put("ports", List.copyOf(destination.ports()));
    return tree;
  }

  /** Each agent's allow-list as the instance egress policy narrows it: what really applies. */
  public SortedMap<String, AllowList> effectiveAllow(EgressPolicy policy) {
    SortedMap<String, AllowList> effective = new TreeMap<>();
    agents.forEach((name, agent) -> effective.put(name, policy.effectiveAllow(agent)));
    return effective;
  }
}
