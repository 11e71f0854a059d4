package dev.agentsandbox.runs;

import dev.agentsandbox.credentials.CommandIssuer;
import dev.agentsandbox.credentials.IssuedCredential;
import dev.agentsandbox.credentials.JwtIssuer;
import dev.agentsandbox.credentials.RunIdentity;
import dev.agentsandbox.credentials.UnableToIssueCredentialException;
import dev.agentsandbox.policy.config.CredentialSpec;
import dev.agentsandbox.store.IssuedToken;
import dev.agentsandbox.store.TokenStore;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Mints the credentials an agent's configuration names, for one run: each from its source, each
 * expiring no later than the run's deadline. Nothing standing is copied: a run token is a fresh
 * token of this control plane whose only scope is the run's own ({@link #runScope}), revoked at
 * teardown; a JWT is signed now; a command credential is whatever the operator's command minted
 * now. Thread-safe.
 */
public final class CredentialMinter {
  /**
   * The scope prefix of run tokens: {@code agent_sandbox.run.<run id>} grants that run's own
   * endpoints.
   */
  public static final String RUN_SCOPE_PREFIX = "agent_sandbox.run.";

  private final TokenStore tokens;
  private final Optional<JwtIssuer> jwt;
  private final Map<String, CommandIssuer> commands;

  /**
   * @param jwt the JWT issuer, when the operator configured signing keys
   * @param commands the operator's registered credential commands, by name
   */
  public CredentialMinter(
      TokenStore tokens, Optional<JwtIssuer> jwt, Map<String, CommandIssuer> commands) {
    this.tokens = tokens;
    this.jwt = jwt;
    this.commands = Map.copyOf(commands);
  }

  /** The scope a run's own token holds. */
  public static String runScope(String runId) {
    return TokenStore.runScope(runId);
  }

  /** The name of a run's own token. */
  public static String runTokenName(String runId) {
    return "run-" + runId;
  }

  /**
   * Why {@code specs} cannot be minted on this control plane (a JWT without signing keys, a command
   * the operator never registered), each naming the credential; empty when every one can be.
   */
  public List<String> problems(Map<String, CredentialSpec> specs) {
    List<String> problems = new ArrayList<>();
    specs.forEach(
        (name, spec) -> {
          if (spec.source() == CredentialSpec.Source.JWT && jwt.isEmpty()) {
            problems.add(
                "credential "
                    + name
                    + ": jwt credentials need signing keys (serve --jwt-keys FILE"
                    + " --jwt-active-kid KID)");
          }
          if (spec.source() == CredentialSpec.Source.COMMAND
              && !commands.containsKey(spec.command().orElseThrow())) {
            problems.add(
                "credential "
                    + name
                    + ": no credential command named "
                    + spec.command().get()
                    + " is registered (serve --credential-command NAME=PATH; registered: "
                    + new java.util.TreeSet<>(commands.keySet())
                    + ")");
          }
        });
    return List.copyOf(problems);
  }

  /**
   * Mints every credential for {@code run}; on a failure, revokes what it minted and throws.
   *
   * @throws UnableToIssueCredentialException naming the credential and what failed
   */
  public List<IssuedCredential> mint(Map<String, CredentialSpec> specs, RunIdentity run) {
    List<IssuedCredential> minted = new ArrayList<>();
    try {
      for (CredentialSpec spec : specs.values()) {
        minted.add(mintOne(spec, run));
      }
      return List.copyOf(minted);
    } catch (RuntimeException e) {
      revoke(run.runId());
      throw e;
    }
  }

  /** Revokes the run's own token, if it has one; idempotent. */
  public void revoke(String runId) {
    tokens.revoke(runTokenName(runId));
  }

  private IssuedCredential mintOne(CredentialSpec spec, RunIdentity run) {
    return switch (spec.source()) {
      case RUN_TOKEN -> {
        IssuedToken token =
            tokens.create(runTokenName(run.runId()), Set.of(runScope(run.runId())), run.deadline());
        yield new IssuedCredential(spec.name(), "run-token", token.secret(), run.deadline());
      }
      case JWT ->
          jwt.orElseThrow(
                  () ->
                      new UnableToIssueCredentialException(
                          "mint credential " + spec.name() + ": no JWT signing keys configured"))
              .issue(spec.name(), run, spec.audience().orElseThrow());
      case COMMAND -> {
        CommandIssuer command = commands.get(spec.command().orElseThrow());
        if (command == null) {
          throw new UnableToIssueCredentialException(
              "mint credential "
                  + spec.name()
                  + ": no credential command named "
                  + spec.command().get()
                  + " is registered");
        }
        yield command.issue(spec.name(), run);
      }
    };
  }
}
