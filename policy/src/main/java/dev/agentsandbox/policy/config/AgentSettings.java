package dev.agentsandbox.policy.config;

import dev.agentsandbox.policy.AllowList;
import java.util.Collections;
import java.util.Objects;
import java.util.Optional;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * One agent's sandbox settings.
 *
 * @param allow the sandbox allow-list (narrowed further by the instance egress policy)
 * @param image the container image the workload runs in
 * @param scope the instance egress policy scope that applies to this agent
 * @param ttlSeconds the run's deadline, from 1 to {@value #MAX_TTL_SECONDS}
 * @param resources resource limits
 * @param credentials the credentials each run gets, by name, each minted for the run alone
 * @param outputs how much of the run's {@code /workspace/out} is kept for review
 * @param internal the internal destinations its runs may reach, by name, each with its ports
 * @param warm how many sandboxes the control plane keeps prepared for this agent's next runs, from
 *     0 (none, the default) to {@value #MAX_WARM}; each is used by one run and then destroyed
 * @param inspect the allow-list hosts whose TLS the run's proxy terminates, by host name, each with
 *     its request rules and injected credential (docs/proxy.md, "Inspected hosts")
 * @param sessions how much one file operation or one step's stdin of this agent's sessions carries
 */
public record AgentSettings(
    AllowList allow,
    String image,
    String scope,
    int ttlSeconds,
    Resources resources,
    SortedMap<String, CredentialSpec> credentials,
    OutputLimits outputs,
    SortedMap<String, InternalDestination> internal,
    int warm,
    SortedMap<String, InspectedHost> inspect,
    SessionLimits sessions) {
  /** The hard cap on a run's lifetime: four hours. */
  public static final int MAX_TTL_SECONDS = 4 * 60 * 60;

  /** The deadline an agent gets when its configuration names none. */
  public static final int DEFAULT_TTL_SECONDS = 900;

  /** The image an agent gets when its configuration names none. */
  public static final String DEFAULT_IMAGE = "agent-sandbox/workload:latest";

  /** The most warm sandboxes one agent may keep prepared. */
  public static final int MAX_WARM = 16;

  public AgentSettings {
    Objects.requireNonNull(allow, "allow");
    Objects.requireNonNull(image, "image");
    Objects.requireNonNull(scope, "scope");
    Objects.requireNonNull(resources, "resources");
    credentials = Collections.unmodifiableSortedMap(new TreeMap<>(credentials));
    credentials.forEach(
        (name, spec) -> {
          if (!name.equals(spec.name())) {
            throw new IllegalArgumentException("credential " + name + " is keyed by another name");
          }
        });
    Objects.requireNonNull(outputs, "outputs");
    internal = Collections.unmodifiableSortedMap(new TreeMap<>(internal));
    internal.forEach(
        (name, destination) -> {
          if (!name.equals(destination.name())) {
            throw new IllegalArgumentException("destination " + name + " is keyed by another name");
          }
        });
    if (ttlSeconds < 1 || ttlSeconds > MAX_TTL_SECONDS) {
      throw new IllegalArgumentException("ttl_seconds out of range: " + ttlSeconds);
    }
    if (warm < 0 || warm > MAX_WARM) {
      throw new IllegalArgumentException("warm out of range: " + warm);
    }
    inspect = Collections.unmodifiableSortedMap(new TreeMap<>(inspect));
    if (inspect.size() > InspectedHost.MAX_PER_AGENT) {
      throw new IllegalArgumentException(
          "more than " + InspectedHost.MAX_PER_AGENT + " inspected hosts");
    }
    for (var entry : inspect.entrySet()) {
      if (!entry.getKey().equals(entry.getValue().host())) {
        throw new IllegalArgumentException(
            "inspected host " + entry.getKey() + " is keyed by another name");
      }
      Optional<Injection> injection = entry.getValue().inject();
      if (injection.isPresent() && !credentials.containsKey(injection.get().credential())) {
        throw new IllegalArgumentException(
            "inspected host " + entry.getKey() + " injects an unknown credential");
      }
    }
    Objects.requireNonNull(sessions, "sessions");
  }

  /** Settings with the default session limits. */
  public AgentSettings(
      AllowList allow,
      String image,
      String scope,
      int ttlSeconds,
      Resources resources,
      SortedMap<String, CredentialSpec> credentials,
      OutputLimits outputs,
      SortedMap<String, InternalDestination> internal,
      int warm,
      SortedMap<String, InspectedHost> inspect) {
    this(
        allow,
        image,
        scope,
        ttlSeconds,
        resources,
        credentials,
        outputs,
        internal,
        warm,
        inspect,
        SessionLimits.DEFAULT);
  }

  /** Settings without inspected hosts. */
  public AgentSettings(
      AllowList allow,
      String image,
      String scope,
      int ttlSeconds,
      Resources resources,
      SortedMap<String, CredentialSpec> credentials,
      OutputLimits outputs,
      SortedMap<String, InternalDestination> internal,
      int warm,
      SessionLimits sessions) {
    this(
        allow,
        image,
        scope,
        ttlSeconds,
        resources,
        credentials,
        outputs,
        internal,
        warm,
        new TreeMap<>(),
        sessions);
  }

  /** Settings without inspected hosts and with the default session limits. */
  public AgentSettings(
      AllowList allow,
      String image,
      String scope,
      int ttlSeconds,
      Resources resources,
      SortedMap<String, CredentialSpec> credentials,
      OutputLimits outputs,
      SortedMap<String, InternalDestination> internal,
      int warm) {
    this(
        allow,
        image,
        scope,
        ttlSeconds,
        resources,
        credentials,
        outputs,
        internal,
        warm,
        new TreeMap<>(),
        SessionLimits.DEFAULT);
  }

  /** The names of the credentials the proxy holds and injects, which the workload never gets. */
  public java.util.SortedSet<String> proxyHeldCredentials() {
    java.util.TreeSet<String> names = new java.util.TreeSet<>();
    inspect.values().forEach(h -> h.inject().ifPresent(i -> names.add(i.credential())));
    return names;
  }

  /** Settings without a warm pool. */
  public AgentSettings(
      AllowList allow,
      String image,
      String scope,
      int ttlSeconds,
      Resources resources,
      SortedMap<String, CredentialSpec> credentials,
      OutputLimits outputs,
      SortedMap<String, InternalDestination> internal) {
    this(allow, image, scope, ttlSeconds, resources, credentials, outputs, internal, 0);
  }

  /**
   * Settings without credentials, internal destinations or a warm pool, and with the default output
   * caps.
   */
  public AgentSettings(
      AllowList allow, String image, String scope, int ttlSeconds, Resources resources) {
    this(allow, image, scope, ttlSeconds, resources, new TreeMap<>(), OutputLimits.DEFAULT);
  }

  /** Settings without internal destinations or a warm pool. */
  public AgentSettings(
      AllowList allow,
      String image,
      String scope,
      int ttlSeconds,
      Resources resources,
      SortedMap<String, CredentialSpec> credentials,
      OutputLimits outputs) {
    this(allow, image, scope, ttlSeconds, resources, credentials, outputs, new TreeMap<>());
  }
}
