package dev.agentsandbox.policy.config;

import dev.agentsandbox.policy.AllowList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Pattern;

/** Reads {@link SandboxConfig} documents; see {@link SandboxConfig#read}. */
final class SandboxConfigReader {
  private static final Set<String> TOP =
      orderedSet("enabled", "backend", "require_runtime_class", "internal_widest", "agents");
  private static final Set<String> TOP_READ_ONLY = Set.of("updated_at", "updated_by");
  private static final Set<String> AGENT =
      orderedSet(
          "allow",
          "image",
          "scope",
          "ttl_seconds",
          "resources",
          "credentials",
          "outputs",
          "internal",
          "warm",
          "inspect",
          "sessions");
  private static final Set<String> AGENT_READ_ONLY = Set.of("effective_allow");
  private static final Set<String> RESOURCES = orderedSet("cpus", "memory_mb", "pids");
  private static final Set<String> CREDENTIAL = orderedSet("source", "audience", "command", "env");
  private static final Set<String> OUTPUTS = orderedSet("max_bytes", "max_files");
  private static final Set<String> SESSIONS = orderedSet("max_file_bytes", "max_stdin_bytes");
  private static final Set<String> INTERNAL = orderedSet("cidr", "service", "ports");
  private static final Set<String> SERVICE =
      orderedSet("namespace", "pod_labels", "host", "pod_ports");
  private static final Set<String> WIDEST = orderedSet("ipv4", "ipv6");
  private static final int MAX_AUDIENCE_LENGTH = 255;
  private static final int MAX_PORTS = dev.agentsandbox.policy.net.InternalRule.MAX_PORTS;

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
    InternalWidest widest = widest(reader, doc.get("internal_widest"));
    TreeMap<String, AgentSettings> agents = new TreeMap<>();
    Object agentsValue = doc.get("agents");
    if (agentsValue != null) {
      Map<String, Object> agentTrees = reader.object("agents", agentsValue);
      if (agentTrees != null) {
        agentTrees.forEach(
            (name, agentTree) -> {
              String path = TreeReader.field("agents", name);
              boolean nameOk = reader.checkName(path, name);
              AgentSettings agent = agent(reader, path, name, agentTree, widest);
              if (nameOk && agent != null) {
                agents.put(name, agent);
              }
            });
      }
    }
    reader.throwIfAny();
    return new SandboxConfig(enabled, backend, requireRuntimeClass, widest, agents);
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

  private static AgentSettings agent(
      TreeReader reader, String path, String name, Object tree, InternalWidest widest) {
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
    TreeMap<String, CredentialSpec> credentials =
        credentials(reader, TreeReader.field(path, "credentials"), agent.get("credentials"));
    OutputLimits outputs = outputs(reader, TreeReader.field(path, "outputs"), agent.get("outputs"));
    TreeMap<String, InternalDestination> internal =
        internal(reader, TreeReader.field(path, "internal"), agent.get("internal"), widest);
    int warm =
        reader.wholeNumber(
            TreeReader.field(path, "warm"), agent.get("warm"), 0, 0, AgentSettings.MAX_WARM);
    TreeMap<String, InspectedHost> inspect =
        InspectReader.hosts(
            reader,
            TreeReader.field(path, "inspect"),
            agent.get("inspect"),
            Optional.of(allow),
            Optional.of(credentials.keySet()));
    SessionLimits sessions =
        sessions(reader, TreeReader.field(path, "sessions"), agent.get("sessions"));
    return new AgentSettings(
        allow,
        image,
        scope,
        ttl,
        resources,
        credentials,
        outputs,
        internal,
        warm,
        inspect,
        sessions);
  }

  private static SessionLimits sessions(TreeReader reader, String path, Object value) {
    if (value == null) {
      return SessionLimits.DEFAULT;
    }
    Map<String, Object> tree = reader.object(path, value);
    if (tree == null) {
      return SessionLimits.DEFAULT;
    }
    reader.onlyKeys(path, tree, SESSIONS, Set.of());
    SessionLimits d = SessionLimits.DEFAULT;
    return new SessionLimits(
        reader.wholeNumber(
            TreeReader.field(path, "max_file_bytes"),
            tree.get("max_file_bytes"),
            (int) d.maxFileBytes(),
            0,
            (int) SessionLimits.MAX_FILE_BYTES),
        reader.wholeNumber(
            TreeReader.field(path, "max_stdin_bytes"),
            tree.get("max_stdin_bytes"),
            d.maxStdinBytes(),
            0,
            SessionLimits.MAX_STDIN_BYTES));
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

  private static TreeMap<String, CredentialSpec> credentials(
      TreeReader reader, String path, Object value) {
    TreeMap<String, CredentialSpec> out = new TreeMap<>();
    if (value == null) {
      return out;
    }
    Map<String, Object> trees = reader.object(path, value);
    if (trees == null) {
      return out;
    }
    Set<String> envs = new java.util.HashSet<>();
    trees.forEach(
        (name, tree) -> {
          String at = TreeReader.field(path, name);
          if (!CredentialSpec.NAME.matcher(name).matches()) {
            reader.problem(
                at,
                "'"
                    + TreeReader.echo(name)
                    + "' is not a credential name (lower-case letters, digits, '.', '_' and '-',"
                    + " starting with a letter or digit, at most 63)");
            return;
          }
          CredentialSpec spec = credential(reader, at, name, tree);
          if (spec != null) {
            if (spec.env().isPresent() && !envs.add(spec.env().get())) {
              reader.problem(
                  TreeReader.field(at, "env"),
                  "another credential is already delivered as " + spec.env().get());
              return;
            }
            out.put(name, spec);
          }
        });
    long runTokens =
        out.values().stream().filter(c -> c.source() == CredentialSpec.Source.RUN_TOKEN).count();
    if (runTokens > 1) {
      reader.problem(path, "at most one run-token credential (a run has one token of its own)");
    }
    return out;
  }

  private static CredentialSpec credential(
      TreeReader reader, String path, String name, Object value) {
    Map<String, Object> tree = reader.object(path, value);
    if (tree == null) {
      return null;
    }
    reader.onlyKeys(path, tree, CREDENTIAL, Set.of());
    String sourcePath = TreeReader.field(path, "source");
    String sourceName = reader.string(sourcePath, tree.get("source"));
    if (sourceName == null) {
      if (tree.get("source") == null) {
        reader.problem(sourcePath, "missing (run-token, jwt or command)");
      }
      return null;
    }
    java.util.Optional<CredentialSpec.Source> source =
        CredentialSpec.Source.fromWireName(sourceName);
    if (source.isEmpty()) {
      reader.problem(
          sourcePath,
          "'"
              + TreeReader.echo(sourceName)
              + "' is not a credential source (run-token, jwt or"
              + " command)");
      return null;
    }
    java.util.Optional<String> audience = java.util.Optional.empty();
    java.util.Optional<String> command = java.util.Optional.empty();
    java.util.Optional<String> env = java.util.Optional.empty();
    boolean ok = true;
    String audiencePath = TreeReader.field(path, "audience");
    if (source.get() == CredentialSpec.Source.JWT) {
      String raw = reader.string(audiencePath, tree.get("audience"));
      if (raw == null
          || raw.isBlank()
          || raw.length() > MAX_AUDIENCE_LENGTH
          || !raw.chars().allMatch(c -> c > 0x20 && c < 0x7f)) {
        reader.problem(
            audiencePath,
            "a jwt credential needs an audience: the verifier's name or URL, printable, no spaces,"
                + " at most "
                + MAX_AUDIENCE_LENGTH
                + " characters");
        ok = false;
      } else {
        audience = java.util.Optional.of(raw);
      }
    } else if (tree.get("audience") != null) {
      reader.problem(audiencePath, "only jwt credentials have an audience");
      ok = false;
    }
    String commandPath = TreeReader.field(path, "command");
    if (source.get() == CredentialSpec.Source.COMMAND) {
      String raw = reader.string(commandPath, tree.get("command"));
      if (raw == null || !reader.checkName(commandPath, raw)) {
        if (raw == null && tree.get("command") == null) {
          reader.problem(
              commandPath,
              "a command credential names a credential command the operator registered"
                  + " (serve --credential-command NAME=PATH)");
        }
        ok = false;
      } else {
        command = java.util.Optional.of(raw);
      }
    } else if (tree.get("command") != null) {
      reader.problem(commandPath, "only command credentials name a command");
      ok = false;
    }
    if (tree.get("env") != null) {
      String envPath = TreeReader.field(path, "env");
      String raw = reader.string(envPath, tree.get("env"));
      if (raw == null) {
        ok = false;
      } else if (!CredentialSpec.ENV.matcher(raw).matches()) {
        reader.problem(
            envPath,
            "'" + TreeReader.echo(raw) + "' is not an environment variable name (A-Z, 0-9, _)");
        ok = false;
      } else if (dev.agentsandbox.policy.run.EnvScreen.keyRefusal(raw).isPresent()) {
        reader.problem(
            envPath,
            raw
                + " would undo the sandbox's fence ("
                + dev.agentsandbox.policy.run.EnvScreen.keyRefusal(raw).get()
                + ")");
        ok = false;
      } else {
        env = java.util.Optional.of(raw);
      }
    }
    return ok ? new CredentialSpec(name, source.get(), audience, command, env) : null;
  }

  private static OutputLimits outputs(TreeReader reader, String path, Object value) {
    if (value == null) {
      return OutputLimits.DEFAULT;
    }
    Map<String, Object> tree = reader.object(path, value);
    if (tree == null) {
      return OutputLimits.DEFAULT;
    }
    reader.onlyKeys(path, tree, OUTPUTS, Set.of());
    OutputLimits d = OutputLimits.DEFAULT;
    return new OutputLimits(
        reader.wholeNumber(
            TreeReader.field(path, "max_bytes"),
            tree.get("max_bytes"),
            (int) d.maxBytes(),
            0,
            (int) OutputLimits.MAX_BYTES),
        reader.wholeNumber(
            TreeReader.field(path, "max_files"),
            tree.get("max_files"),
            d.maxFiles(),
            0,
            OutputLimits.MAX_FILES));
  }

  private static InternalWidest widest(TreeReader reader, Object value) {
    if (value == null) {
      return InternalWidest.DEFAULT;
    }
    Map<String, Object> tree = reader.object("internal_widest", value);
    if (tree == null) {
      return InternalWidest.DEFAULT;
    }
    reader.onlyKeys("internal_widest", tree, WIDEST, Set.of());
    InternalWidest d = InternalWidest.DEFAULT;
    return new InternalWidest(
        reader.wholeNumber(
            "internal_widest.ipv4",
            tree.get("ipv4"),
            d.ipv4Prefix(),
            dev.agentsandbox.policy.net.InternalRule.WIDEST_IPV4_PREFIX,
            32),
        reader.wholeNumber(
            "internal_widest.ipv6",
            tree.get("ipv6"),
            d.ipv6Prefix(),
            dev.agentsandbox.policy.net.InternalRule.WIDEST_IPV6_PREFIX,
            128));
  }

  /**
   * An agent's internal destinations, each a range or a service with its ports; together the ranges
   * may cover no more than {@code widest} allows.
   */
  private static TreeMap<String, InternalDestination> internal(
      TreeReader reader, String path, Object value, InternalWidest widest) {
    TreeMap<String, InternalDestination> out = new TreeMap<>();
    if (value == null) {
      return out;
    }
    Map<String, Object> trees = reader.object(path, value);
    if (trees == null) {
      return out;
    }
    trees.forEach(
        (name, tree) -> {
          String at = TreeReader.field(path, name);
          if (!InternalDestination.NAME.matcher(name).matches()) {
            reader.problem(
                at,
                "'"
                    + TreeReader.echo(name)
                    + "' is not a destination name (lower-case letters, digits, '.', '_' and '-',"
                    + " starting and ending with a letter or digit, at most 63)");
            return;
          }
          InternalDestination destination = destination(reader, at, name, tree);
          if (destination != null) {
            out.put(name, destination);
          }
        });
    List<dev.agentsandbox.policy.net.Cidr> ranges =
        out.values().stream().flatMap(d -> d.cidr().stream()).toList();
    widest
        .excess(ranges)
        .ifPresent(problem -> reader.problem(path, "the internal ranges " + problem));
    return out;
  }

  private static InternalDestination destination(
      TreeReader reader, String path, String name, Object value) {
    Map<String, Object> tree = reader.object(path, value);
    if (tree == null) {
      return null;
    }
    reader.onlyKeys(path, tree, INTERNAL, Set.of());
    List<Integer> ports = requiredPorts(reader, TreeReader.field(path, "ports"), tree);
    boolean hasCidr = tree.get("cidr") != null;
    if (hasCidr == (tree.get("service") != null)) {
      reader.problem(path, "names a cidr or a service (exactly one)");
      return null;
    }
    java.util.Optional<dev.agentsandbox.policy.net.Cidr> cidr = java.util.Optional.empty();
    java.util.Optional<InternalDestination.ClusterService> service = java.util.Optional.empty();
    if (hasCidr) {
      String cidrPath = TreeReader.field(path, "cidr");
      String raw = reader.string(cidrPath, tree.get("cidr"));
      if (raw == null) {
        return null;
      }
      try {
        cidr = java.util.Optional.of(dev.agentsandbox.policy.net.Cidr.parse(raw));
      } catch (IllegalArgumentException e) {
        reader.problem(cidrPath, e.getMessage());
        return null;
      }
    } else {
      service = service(reader, TreeReader.field(path, "service"), tree.get("service"));
      if (service.isEmpty()) {
        return null;
      }
    }
    if (ports == null) {
      return null;
    }
    try {
      return new InternalDestination(name, cidr, service, new java.util.TreeSet<>(ports));
    } catch (IllegalArgumentException e) {
      reader.problem(path, e.getMessage());
      return null;
    }
  }

  private static java.util.Optional<InternalDestination.ClusterService> service(
      TreeReader reader, String path, Object value) {
    Map<String, Object> tree = reader.object(path, value);
    if (tree == null) {
      return java.util.Optional.empty();
    }
    reader.onlyKeys(path, tree, SERVICE, Set.of());
    boolean ok = true;
    String namespacePath = TreeReader.field(path, "namespace");
    String namespace = reader.string(namespacePath, tree.get("namespace"));
    if (namespace == null || !reader.checkName(namespacePath, namespace)) {
      if (tree.get("namespace") == null) {
        reader.problem(namespacePath, "missing (the namespace the service's pods run in)");
      }
      ok = false;
    } else if (namespace.startsWith("agent-run-") || namespace.equals("kube-system")) {
      reader.problem(
          namespacePath,
          namespace
              + " is never an internal destination (another sandbox, or the cluster's own"
              + " machinery)");
      ok = false;
    }
    TreeMap<String, String> labels = new TreeMap<>();
    String labelsPath = TreeReader.field(path, "pod_labels");
    Map<String, Object> labelTree =
        tree.get("pod_labels") == null ? null : reader.object(labelsPath, tree.get("pod_labels"));
    if (labelTree == null || labelTree.isEmpty()) {
      if (labelTree != null || tree.get("pod_labels") == null) {
        reader.problem(labelsPath, "at least one label that selects the service's pods");
      }
      ok = false;
    } else {
      labelTree.forEach(
          (key, v) -> {
            String label = reader.string(TreeReader.field(labelsPath, key), v);
            if (label != null) {
              labels.put(key, label);
            }
          });
      for (String problem : dev.agentsandbox.policy.run.RunLabels.problems(labels)) {
        // RunLabels names each problem "labels<path>: <message>".
        int colon = problem.indexOf(": ");
        reader.problem(
            labelsPath + problem.substring("labels".length(), colon), problem.substring(colon + 2));
        ok = false;
      }
      if (labels.size() != labelTree.size()) {
        ok = false;
      }
    }
    String hostPath = TreeReader.field(path, "host");
    String host = reader.string(hostPath, tree.get("host"));
    if (host == null) {
      if (tree.get("host") == null) {
        reader.problem(
            hostPath,
            "missing (the cluster DNS name the agent connects to, such as"
                + " platform-gateway.platform.svc.cluster.local)");
      }
      ok = false;
    } else {
      try {
        String canonical = dev.agentsandbox.policy.HostName.canonicalTargetHost(host);
        if (!canonical.equals(host)) {
          reader.problem(hostPath, "write the host name as " + canonical);
          ok = false;
        }
      } catch (dev.agentsandbox.policy.InvalidHostException e) {
        reader.problem(hostPath, e.getMessage());
        ok = false;
      }
    }
    List<Integer> podPorts = List.of();
    if (tree.get("pod_ports") != null) {
      podPorts = ports(reader, TreeReader.field(path, "pod_ports"), tree.get("pod_ports"));
      ok &= podPorts != null;
    }
    if (!ok) {
      return java.util.Optional.empty();
    }
    return java.util.Optional.of(
        new InternalDestination.ClusterService(
            namespace, labels, host, new java.util.TreeSet<>(podPorts)));
  }

  /** The {@code ports} field of {@code tree}: required, 1 to 16 ports, each 1 to 65535. */
  static List<Integer> requiredPorts(TreeReader reader, String path, Map<String, Object> tree) {
    if (tree.get("ports") == null) {
      reader.problem(path, "missing (the ports the destination serves, such as [4000])");
      return null;
    }
    return ports(reader, path, tree.get("ports"));
  }

  private static List<Integer> ports(TreeReader reader, String path, Object value) {
    if (!(value instanceof List<?> list) || list.isEmpty()) {
      reader.problem(path, "must be a list of 1 to " + MAX_PORTS + " ports, each 1 to 65535");
      return null;
    }
    if (list.size() > MAX_PORTS) {
      reader.problem(path, "at most " + MAX_PORTS + " ports");
      return null;
    }
    List<Integer> ports = new java.util.ArrayList<>();
    boolean ok = true;
    for (int i = 0; i < list.size(); i++) {
      int port = reader.wholeNumber(TreeReader.index(path, i), list.get(i), -1, 1, 65535);
      if (port < 0) {
        if (list.get(i) == null) {
          reader.problem(TreeReader.index(path, i), "must be a port, 1 to 65535");
        }
        ok = false;
      } else {
        ports.add(port);
      }
    }
    return ok ? ports : null;
  }

  static Set<String> orderedSet(String... names) {
    return new LinkedHashSet<>(List.of(names));
  }
}
