package dev.agentsandbox.policy.event;

import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * {@code agent_sandbox.credentials.issue}: the credentials minted for the run, right after its
 * launch row; names, sources and expiries, never values.
 *
 * @param credentials each credential minted
 */
public record CredentialsIssued(List<Credential> credentials) implements RunEvent {

  /**
   * One minted credential.
   *
   * @param name its name in the agent's configuration
   * @param source {@code run-token}, {@code jwt} or {@code command}
   * @param audience a JWT's audience
   * @param command a command credential's registered command
   * @param env the environment variable it is also delivered in
   * @param expiresAt when it expires
   */
  public record Credential(
      String name,
      String source,
      Optional<String> audience,
      Optional<String> command,
      Optional<String> env,
      Instant expiresAt) {
    public Credential {
      Objects.requireNonNull(name, "name");
      Objects.requireNonNull(source, "source");
      Objects.requireNonNull(audience, "audience");
      Objects.requireNonNull(command, "command");
      Objects.requireNonNull(env, "env");
      Objects.requireNonNull(expiresAt, "expiresAt");
    }

    Map<String, Object> toTree() {
      return Fields.tree()
          .put("name", name)
          .put("source", source)
          .putIfPresent("audience", audience)
          .putIfPresent("command", command)
          .putIfPresent("env", env)
          .put("expires_at", expiresAt.toString())
          .build();
    }

    static Credential read(Fields f) {
      return new Credential(
          f.string("name"),
          f.string("source"),
          f.optionalString("audience"),
          f.optionalString("command"),
          f.optionalString("env"),
          f.instant("expires_at"));
    }
  }

  public CredentialsIssued {
    credentials = List.copyOf(credentials);
  }

  @Override
  public EventType type() {
    return EventType.CREDENTIALS_ISSUE;
  }

  @Override
  public Map<String, Object> toTree() {
    return Fields.tree()
        .put("credentials", credentials.stream().map(Credential::toTree).toList())
        .build();
  }

  static CredentialsIssued read(Object data) {
    Fields f = Fields.of(EventType.CREDENTIALS_ISSUE, data);
    CredentialsIssued issued = new CredentialsIssued(f.objects("credentials", Credential::read));
    f.done();
    return issued;
  }
}
