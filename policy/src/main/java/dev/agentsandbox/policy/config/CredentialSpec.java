package dev.agentsandbox.policy.config;

import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * One credential an agent's runs get, minted per run by its source and expiring with the run.
 *
 * @param name its file name under {@code /run/agent-sandbox/credentials/}
 * @param source what mints it
 * @param audience the JWT's {@code aud} ({@link Source#JWT} only)
 * @param command the name of an operator-registered credential command ({@link Source#COMMAND}
 *     only); the executable itself is set on the control plane's command line, never in this
 *     document, so no API call can make the control plane run a program of its choosing
 * @param env also deliver it as this environment variable (files only when empty)
 */
public record CredentialSpec(
    String name,
    Source source,
    Optional<String> audience,
    Optional<String> command,
    Optional<String> env) {
  /** A credential's name: a file name a shell needs no quoting for. */
  public static final Pattern NAME = Pattern.compile("[a-z0-9][a-z0-9_.-]{0,62}");

  /** An environment variable's name. */
  public static final Pattern ENV = Pattern.compile("[A-Z_][A-Z0-9_]{0,127}");

  /** Where a run's credential comes from. */
  public enum Source {
    /** A token of this control plane whose only rights are the run's own endpoints. */
    RUN_TOKEN,
    /** A JWT signed by the control plane for a verifier named by its audience. */
    JWT,
    /** An operator-registered executable (STS, Vault, workload identity). */
    COMMAND;

    /**
     * The name used in documents and audit rows: {@code run-token}, {@code jwt}, {@code command}.
     */
    public String wireName() {
      return name().toLowerCase(Locale.ROOT).replace('_', '-');
    }

    /** The source of a wire name, if any. */
    public static Optional<Source> fromWireName(String name) {
      for (Source s : values()) {
        if (s.wireName().equals(name)) {
          return Optional.of(s);
        }
      }
      return Optional.empty();
    }
  }

  public CredentialSpec {
    Objects.requireNonNull(name, "name");
    if (!NAME.matcher(name).matches()) {
      throw new IllegalArgumentException("credential name is not a plain file name: " + name);
    }
    Objects.requireNonNull(source, "source");
    Objects.requireNonNull(audience, "audience");
    Objects.requireNonNull(command, "command");
    Objects.requireNonNull(env, "env");
    if (audience.isPresent() != (source == Source.JWT)) {
      throw new IllegalArgumentException("an audience is for jwt credentials, and they need one");
    }
    if (command.isPresent() != (source == Source.COMMAND)) {
      throw new IllegalArgumentException("a command is for command credentials, and they need one");
    }
    env.ifPresent(
        e -> {
          if (!ENV.matcher(e).matches()) {
            throw new IllegalArgumentException("not an environment variable name: " + e);
          }
        });
  }
}
