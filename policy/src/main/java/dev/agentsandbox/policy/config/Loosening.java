package dev.agentsandbox.policy.config;

import java.util.Locale;
import java.util.Objects;

/**
 * One way a change loosens the configuration; any loosening makes the change a weakening that needs
 * the {@code governance.weaken} scope and a reason.
 *
 * @param path the JSON path of what loosened, in the document after the change
 * @param kind what kind of loosening it is
 * @param detail what changed, for a person
 */
public record Loosening(String path, Kind kind, String detail) {
  /** The kinds of loosening, a closed set so audit rows and metrics stay bounded. */
  public enum Kind {
    /** {@code enabled} turned from false to true. */
    ENABLED_TURNED_ON,
    /** The backend moved down the isolation order of {@link Backend}. */
    BACKEND_WEAKENED,
    /** {@code require_runtime_class} turned from true to false. */
    RUNTIME_CLASS_NOT_REQUIRED,
    /** An agent that was not configured now is. */
    AGENT_ADDED,
    /** An allow-list entry that allows something no former entry allowed. */
    ALLOW_ENTRY_ADDED,
    /** An allow-list entry that allows more than a former entry it overlaps (wildcard, port). */
    ALLOW_ENTRY_WIDENED,
    /** An agent moved to another egress policy scope, whose rule may be wider. */
    SCOPE_CHANGED,
    /** An agent's {@code ttl_seconds} went up. */
    TTL_RAISED,
    /** An agent's cpus, memory or pids limit went up. */
    RESOURCE_RAISED,
    /** An egress policy rule became unrestricted. */
    EGRESS_UNRESTRICTED,
    /** An agent's runs get a credential they did not get before. */
    CREDENTIAL_ADDED,
    /** A credential now comes from another source, another command, or for another audience. */
    CREDENTIAL_WIDENED,
    /** A credential is now also delivered in the environment, visible to every process. */
    CREDENTIAL_IN_ENV,
    /** More of a run's outputs is kept (bytes or files). */
    OUTPUTS_RAISED,
    /** An agent's runs may reach an internal destination they could not reach before. */
    INTERNAL_DESTINATION_ADDED,
    /** An internal destination covers more: a wider or moved range, another service selector. */
    INTERNAL_DESTINATION_WIDENED,
    /** An internal destination is reachable on a port it was not reachable on before. */
    INTERNAL_PORT_ADDED,
    /** {@code internal_widest} allows agents' internal ranges to cover more addresses. */
    INTERNAL_WIDEST_RAISED,
    /**
     * An agent keeps more sandboxes prepared ({@code warm}): more proxies and idle workloads run
     * before anyone asked for them, each holding the agent's policy as it was when prepared.
     */
    WARM_RAISED,
    /**
     * An inspected host that had rules has none (its entry, or its {@code rules}, removed) while
     * the host stays allowed: every method and path of it is allowed again.
     */
    INSPECTION_RULES_REMOVED,
    /** A rule of an inspected host allows a method on a path its former rules did not. */
    INSPECTION_RULE_WIDENED,
    /** A host now gets a credential set on its requests that it did not get before. */
    INJECTION_ADDED,
    /** The header or template an injected credential is set as changed. */
    INJECTION_CHANGED,
    /**
     * A credential the proxy held (injected, never in the sandbox) is now delivered into the
     * sandbox, where the workload can read it and send it anywhere it may reach.
     */
    CREDENTIAL_TO_WORKLOAD,
    /**
     * An agent's sessions may carry more in one operation: a file put or get ({@code
     * sessions.max_file_bytes}) or a step's standard input ({@code sessions.max_stdin_bytes}).
     */
    SESSION_LIMIT_RAISED;

    /** The name used in documents, audit rows and metric labels. */
    public String wireName() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  public Loosening {
    Objects.requireNonNull(path, "path");
    Objects.requireNonNull(kind, "kind");
    Objects.requireNonNull(detail, "detail");
  }

  @Override
  public String toString() {
    return path + ": " + detail;
  }
}
