package dev.agentsandbox.policy.event;

import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * {@code agent_sandbox.launch}: what was launched, where and under which caps, written before the
 * backend creates anything (docs/architecture.md invariant 10).
 *
 * @param backend the backend chosen
 * @param runtime the runtime its probe reported
 * @param isolation how strongly that runtime isolates ({@code container}, {@code gvisor}, ...)
 * @param image the image as named
 * @param command the command, secrets redacted (empty for a session, whose steps come later)
 * @param envKeys the environment's names, sorted; never the values
 * @param effectiveAllow the effective allow-list
 * @param ttlSeconds the time to live
 * @param resources the caps
 * @param requireRuntimeClass whether gVisor was required
 * @param expiresAt the run's expiry label
 * @param warm whether the run took a warm sandbox (false in rows written before warm pools)
 * @param warmPreparedAt when that sandbox was prepared
 * @param sessionIdleSeconds for a session, its idle time-out; empty for a one-shot run
 */
public record Launched(
    String backend,
    String runtime,
    String isolation,
    String image,
    List<String> command,
    List<String> envKeys,
    List<String> effectiveAllow,
    long ttlSeconds,
    Resources resources,
    boolean requireRuntimeClass,
    Instant expiresAt,
    boolean warm,
    Optional<Instant> warmPreparedAt,
    Optional<Long> sessionIdleSeconds)
    implements RunEvent {
  /** The {@code kind} of a session's launch row. */
  public static final String SESSION = "session";

  public Launched {
    Objects.requireNonNull(backend, "backend");
    Objects.requireNonNull(runtime, "runtime");
    Objects.requireNonNull(isolation, "isolation");
    Objects.requireNonNull(image, "image");
    command = List.copyOf(command);
    envKeys = List.copyOf(envKeys);
    effectiveAllow = List.copyOf(effectiveAllow);
    Objects.requireNonNull(resources, "resources");
    Objects.requireNonNull(expiresAt, "expiresAt");
    Objects.requireNonNull(warmPreparedAt, "warmPreparedAt");
    Objects.requireNonNull(sessionIdleSeconds, "sessionIdleSeconds");
    if (warmPreparedAt.isPresent() && !warm) {
      throw new IllegalArgumentException("only a warm launch has a preparation time");
    }
  }

  /**
   * The caps of the run.
   *
   * @param cpus CPU cores
   * @param memoryMb memory in MiB
   * @param pids most processes
   */
  public record Resources(double cpus, long memoryMb, long pids) {
    Map<String, Object> toTree() {
      return Fields.tree().put("cpus", cpus).put("memory_mb", memoryMb).put("pids", pids).build();
    }

    static Resources read(Fields f) {
      return new Resources(f.number("cpus"), f.whole("memory_mb"), f.whole("pids"));
    }
  }

  @Override
  public EventType type() {
    return EventType.LAUNCH;
  }

  @Override
  public Map<String, Object> toTree() {
    Fields.Tree tree =
        Fields.tree()
            .put("backend", backend)
            .put("runtime", runtime)
            .put("isolation", isolation)
            .put("image", image)
            .put("command", command)
            .put("env_keys", envKeys)
            .put("effective_allow", effectiveAllow)
            .put("ttl_seconds", ttlSeconds)
            .put("resources", resources.toTree())
            .put("require_runtime_class", requireRuntimeClass)
            .put("expires_at", expiresAt.toString())
            .put("warm", warm)
            .putIfPresent("warm_prepared_at", warmPreparedAt);
    sessionIdleSeconds.ifPresent(idle -> tree.put("kind", SESSION).put("idle_seconds", idle));
    return tree.build();
  }

  static Launched read(Object data) {
    Fields f = Fields.of(EventType.LAUNCH, data);
    boolean session = SESSION.equals(f.string("kind", ""));
    Launched launched =
        new Launched(
            f.string("backend"),
            f.string("runtime"),
            f.string("isolation"),
            f.string("image"),
            f.stringsOrEmpty("command"),
            f.strings("env_keys"),
            f.strings("effective_allow"),
            f.whole("ttl_seconds"),
            f.object("resources", Resources::read),
            f.bool("require_runtime_class", false),
            f.instant("expires_at"),
            f.bool("warm", false),
            f.optionalInstant("warm_prepared_at"),
            session ? Optional.of(f.whole("idle_seconds")) : Optional.empty());
    f.done();
    return launched;
  }
}
