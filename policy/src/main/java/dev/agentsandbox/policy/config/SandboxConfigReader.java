package dev.agentsandbox.policy.config;

import dev.agentsandbox.policy.AllowList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Pattern;

/** Reads {@link SandboxConfig} documents; see {@link SandboxConfig#read}. */
final class SandboxConfigReader {
  private static final Set<String> TOP =
      orderedSet("enabled", "backend", "require_runtime_class", "agents");
  private static final Set<String> TOP_READ_ONLY = Set.of("updated_at", "updated_by");
  private static final Set<String> AGENT =
      orderedSet("allow", "image", "scope", "ttl_seconds", "resources");
  private static final Set<String> AGENT_READ_ONLY = Set.of("effective_allow");
  private static final Set<String> RESOURCES = orderedSet("cpus", "memory_mb", "pids");

  /**
   * An OCI image reference: optional registry host[:port], slash-separated lower-case path
   * components, optional tag, optional sha256 digest (the grammar of distribution/reference).
   */
  private static final Pattern IMAGE =
      Pattern.compile(
          "(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*"
              + "(?::[0-9]{1,5})?/)?"
              + "[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
              + "(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*"
              + "(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?"
              + "(?:@sha256:[a-f0-9]{64})?");

  private static final int MAX_IMAGE_LENGTH = 255;

  private SandboxConfigReader() {}

  static SandboxConfig read(Object tree) {
    TreeReader reader = new TreeReader();
    Map<String, Object> doc = reader.object("", tree);
    if (doc == null) {
      throw reader.failure();
    }
    reader.onlyKeys("", doc, TOP, TOP_READ_ONLY);
    boolean enabled = reader.bool("enabled", doc.get("enabled"), false);
    Backend backend = backend(reader, doc.get("backend"));
    boolean requireRuntimeClass =
        reader.bool("require_runtime_class", doc.get("require_runtime_class"), false);
    TreeMap<String, AgentSettings> agents = new TreeMap<>();
    Object agentsValue = doc.get("agents");
    if (agentsValue != null) {
      Map<String, Object> agentTrees = reader.object("agents", agentsValue);
      if (agentTrees != null) {
        agentTrees.forEach(
            (name, agentTree) -> {
              String path = TreeReader.field("agents", name);
              boolean nameOk = reader.checkName(path, name);
              AgentSettings agent = agent(reader, path, name, agentTree);
              if (nameOk && agent != null) {
                agents.put(name, agent);
              }
            });
      }
    }
    reader.throwIfAny();
    return new SandboxConfig(enabled, backend, requireRuntimeClass, agents);
  }

  private static Backend backend(TreeReader reader, Object value) {
    if (value == null) {
      return Backend.AUTO;
    }
    String name = reader.string("backend", value);
    if (name == null) {
      return Backend.AUTO;
    }
    return Backend.fromWireName(name)
        .orElseGet(
            () -> {
              reader.problem(
                  "backend",
                  "'"
                      + TreeReader.echo(name)
                      + "' is not a backend (auto, k8s, firecracker, microvm or docker)");
              return Backend.AUTO;
            });
  }

  private static AgentSettings agent(TreeReader reader, String path, String name, Object tree) {
    Map<String, Object> agent = reader.object(path, tree);
    if (agent == null) {
      return null;
    }
    reader.onlyKeys(path, agent, AGENT, AGENT_READ_ONLY);
    AllowList allow =
        agent.containsKey("allow")
            ? reader.allowList(TreeReader.field(path, "allow"), agent.get("allow"))
            : AllowList.EMPTY;
    String image = AgentSettings.DEFAULT_IMAGE;
    if (agent.get("image") != null) {
      String imagePath = TreeReader.field(path, "image");
      String raw = reader.string(imagePath, agent.get("image"));
      if (raw != null) {
        if (raw.length() <= MAX_IMAGE_LENGTH && IMAGE.matcher(raw).matches()) {
          image = raw;
        } else {
          reader.problem(
              imagePath,
              "'"
                  + TreeReader.echo(raw)
                  + "' is not an image reference (such as registry.example.com/team/agent:1.2)");
        }
      }
    }
    String scope = name;
    if (agent.get("scope") != null) {
      String scopePath = TreeReader.field(path, "scope");
      String raw = reader.string(scopePath, agent.get("scope"));
      if (raw != null && reader.checkName(scopePath, raw)) {
        scope = raw;
      }
    }
    int ttl =
        reader.wholeNumber(
            TreeReader.field(path, "ttl_seconds"),
            agent.get("ttl_seconds"),
            AgentSettings.DEFAULT_TTL_SECONDS,
            1,
            AgentSettings.MAX_TTL_SECONDS);
    Resources resources = resources(reader, TreeReader.field(path, "resources"), agent);
    return new AgentSettings(allow, image, scope, ttl, resources);
  }

  private static Resources resources(TreeReader reader, String path, Map<String, Object> agent) {
    Object value = agent.get("resources");
    if (value == null) {
      return Resources.DEFAULT;
    }
    Map<String, Object> tree = reader.object(path, value);
    if (tree == null) {
      return Resources.DEFAULT;
    }
    reader.onlyKeys(path, tree, RESOURCES, Set.of());
    Resources d = Resources.DEFAULT;
    return new Resources(
        reader.fraction(
            TreeReader.field(path, "cpus"),
            tree.get("cpus"),
            d.cpus(),
            Resources.MIN_CPUS,
            Resources.MAX_CPUS),
        reader.wholeNumber(
            TreeReader.field(path, "memory_mb"),
            tree.get("memory_mb"),
            d.memoryMb(),
            Resources.MIN_MEMORY_MB,
            Resources.MAX_MEMORY_MB),
        reader.wholeNumber(
            TreeReader.field(path, "pids"),
            tree.get("pids"),
            d.pids(),
            Resources.MIN_PIDS,
            Resources.MAX_PIDS));
  }

  static Set<String> orderedSet(String... names) {
    return new LinkedHashSet<>(List.of(names));
  }
}
