package dev.agentsandbox.policy.event;

import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * {@code agent_sandbox.refused}: a request that must not run, written before the error is sent;
 * nothing was created. A row of no run.
 *
 * @param reason the refusal's code ({@code env_refused}, {@code too_many_runs}, ...)
 * @param message what a person reads
 * @param problems each problem found
 * @param envKeys the request's environment names, sorted; never the values
 * @param command the request's command, secrets redacted
 * @param revocations credentials minted before the refusal and what became of each (written only
 *     when some had been minted)
 * @param tokenAgents the agents the asking token is limited to, sorted (written only for such a
 *     token: its request of another agent is refused as {@code agent_not_listed}, and this says
 *     why; docs/architecture.md invariant 13)
 * @param session whether a session was refused (written as {@code "kind": "session"}, its command
 *     empty: a session's steps come later); a one-shot run's row has no {@code kind}, as always
 */
public record Refused(
    String reason,
    String message,
    List<String> problems,
    List<String> envKeys,
    List<String> command,
    List<Revocation> revocations,
    List<String> tokenAgents,
    boolean session)
    implements RunEvent {

  /** The refusal of a one-shot run. */
  public Refused(
      String reason,
      String message,
      List<String> problems,
      List<String> envKeys,
      List<String> command,
      List<Revocation> revocations,
      List<String> tokenAgents) {
    this(reason, message, problems, envKeys, command, revocations, tokenAgents, false);
  }

  public Refused {
    Objects.requireNonNull(reason, "reason");
    Objects.requireNonNull(message, "message");
    problems = List.copyOf(problems);
    envKeys = List.copyOf(envKeys);
    command = List.copyOf(command);
    revocations = List.copyOf(revocations);
    tokenAgents = List.copyOf(tokenAgents);
    if (session && !command.isEmpty()) {
      throw new IllegalArgumentException("a session's refusal has no command");
    }
  }

  @Override
  public EventType type() {
    return EventType.REFUSED;
  }

  @Override
  public Map<String, Object> toTree() {
    Fields.Tree tree =
        Fields.tree()
            .put("reason", reason)
            .put("message", message)
            .put("problems", problems)
            .put("env_keys", envKeys)
            .put("command", command);
    if (!revocations.isEmpty()) {
      tree.put("revocations", revocations.stream().map(Revocation::toTree).toList());
    }
    if (!tokenAgents.isEmpty()) {
      tree.put("token_agents", tokenAgents);
    }
    if (session) {
      tree.put("kind", Launched.SESSION);
    }
    return tree.build();
  }

  static Refused read(Object data) {
    Fields f = Fields.of(EventType.REFUSED, data);
    Refused refused =
        new Refused(
            f.string("reason"),
            f.string("message"),
            f.stringsOrEmpty("problems"),
            f.stringsOrEmpty("env_keys"),
            f.stringsOrEmpty("command"),
            f.has("revocations") ? f.objects("revocations", Revocation::read) : List.of(),
            f.stringsOrEmpty("token_agents"),
            Launched.SESSION.equals(f.string("kind", "")));
    f.done();
    return refused;
  }
}
