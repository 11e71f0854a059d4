package dev.agentsandbox.runs;

import dev.agentsandbox.credentials.CommandIssuer;
import dev.agentsandbox.credentials.CommandRevoker;
import dev.agentsandbox.credentials.IssuedCredential;
import dev.agentsandbox.credentials.JwtIssuer;
import dev.agentsandbox.credentials.RunIdentity;
import dev.agentsandbox.credentials.UnableToIssueCredentialException;
import dev.agentsandbox.policy.config.CredentialSpec;
import dev.agentsandbox.policy.event.CredentialsIssued;
import dev.agentsandbox.policy.event.Revocation;
import dev.agentsandbox.store.IssuedToken;
import dev.agentsandbox.store.TokenInfo;
import dev.agentsandbox.store.TokenStore;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Predicate;

/**
 * Mints the credentials an agent's configuration names, for one run: each from its source, each
 * expiring no later than the run's deadline. Nothing standing is copied: a run token is a fresh
 * token of this control plane whose only scope is the run's own ({@link #runScope}), revoked at
 * teardown; a JWT is signed now; a command credential is whatever the operator's command minted
 * now. Revoked when the workload stops ({@link #revoke}), when the run is refused after some were
 * minted, after a restart ({@link #revokeLeftBehind}) and by the reaper's pass for run tokens an
 * earlier attempt could not revoke ({@link #sweepRunTokens}); what cannot be revoked is said, never
 * hidden ({@link Revocation}). Thread-safe.
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
  private final Map<String, CommandRevoker> revokers;

  /** Without revoke commands: a command credential then lives until its expiry. */
  public CredentialMinter(
      TokenStore tokens, Optional<JwtIssuer> jwt, Map<String, CommandIssuer> commands) {
    this(tokens, jwt, commands, Map.of());
  }

  /**
   * @param jwt the JWT issuer, when the operator configured signing keys
   * @param commands the operator's registered credential commands, by name
   * @param revokers the operator's revoke commands, by the name of the command they revoke for
   */
  public CredentialMinter(
      TokenStore tokens,
      Optional<JwtIssuer> jwt,
      Map<String, CommandIssuer> commands,
      Map<String, CommandRevoker> revokers) {
    this.tokens = tokens;
    this.jwt = jwt;
    this.commands = Map.copyOf(commands);
    this.revokers = Map.copyOf(revokers);
  }

  /** The scope a run's own token holds. */
  public static String runScope(String runId) {
    return TokenStore.runScope(runId);
  }

  /** The name of a run's own token. */
  public static String runTokenName(String runId) {
    return RUN_TOKEN_PREFIX + runId;
  }

  private static final String RUN_TOKEN_PREFIX = "run-";

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
   * @throws UnableToMintCredentialsException naming the credential and what failed, with what
   *     became of those minted before it
   */
  public List<IssuedCredential> mint(Map<String, CredentialSpec> specs, RunIdentity run) {
    List<IssuedCredential> minted = new ArrayList<>();
    for (CredentialSpec spec : specs.values()) {
      try {
        minted.add(mintOne(spec, run));
      } catch (RuntimeException e) {
        if (spec.source() == CredentialSpec.Source.RUN_TOKEN) {
          // A token row may have been committed before the failure was seen.
          revokeQuietly(run.runId());
        }
        throw new UnableToMintCredentialsException(e.getMessage(), revoke(specs, run, minted), e);
      }
    }
    return List.copyOf(minted);
  }

  /**
   * Revokes every credential of {@code minted}: the run token in the store, a command credential by
   * its revoke command when one is registered; a JWT cannot be recalled. Never throws: a failure is
   * an outcome.
   */
  public List<Revocation> revoke(
      Map<String, CredentialSpec> specs, RunIdentity run, List<IssuedCredential> minted) {
    List<Revocation> out = new ArrayList<>();
    for (IssuedCredential credential : minted) {
      out.add(revokeOne(specs.get(credential.name()), run, credential));
    }
    return List.copyOf(out);
  }

  private Revocation revokeOne(CredentialSpec spec, RunIdentity run, IssuedCredential c) {
    try {
      switch (spec == null ? CredentialSpec.Source.JWT : spec.source()) {
        case RUN_TOKEN -> tokens.revoke(runTokenName(run.runId()));
        case JWT -> {
          return live(c, Revocation.Outcome.EXPIRES, "a signed JWT cannot be recalled");
        }
        case COMMAND -> {
          String command = spec.command().orElseThrow();
          CommandRevoker revoker = revokers.get(command);
          if (revoker == null) {
            return live(
                c,
                Revocation.Outcome.EXPIRES,
                "no revoke command is registered for "
                    + command
                    + " (serve --credential-revoke-command "
                    + command
                    + "=PATH)");
          }
          revoker.revoke(c, run);
        }
      }
      return new Revocation(
          c.name(), c.source(), Revocation.Outcome.REVOKED, c.expiresAt(), Optional.empty());
    } catch (RuntimeException e) {
      return live(c, Revocation.Outcome.FAILED, RunLifecycle.bounded(e.getMessage()));
    }
  }

  private static Revocation live(IssuedCredential c, Revocation.Outcome outcome, String why) {
    return new Revocation(c.name(), c.source(), outcome, c.expiresAt(), Optional.of(why));
  }

  /**
   * Revokes what a run that a previous life of the control plane left live may still hold: its run
   * token; the other credentials it was issued ({@code issued}, its {@code credentials.issue} row)
   * are named as left to expire, their values having died with that control plane.
   *
   * @param expiresAt the run's expiry, for a run token no issue row names
   */
  public List<Revocation> revokeLeftBehind(
      String runId, Instant expiresAt, Optional<CredentialsIssued> issued) {
    Optional<String> problem = Optional.empty();
    boolean revoked = false;
    try {
      revoked = tokens.revoke(runTokenName(runId));
    } catch (RuntimeException e) {
      problem = Optional.of(RunLifecycle.bounded(e.getMessage()));
    }
    List<Revocation> out = new ArrayList<>();
    boolean tokenNamed = false;
    for (CredentialsIssued.Credential c :
        issued.map(CredentialsIssued::credentials).orElse(List.of())) {
      if (c.source().equals("run-token")) {
        tokenNamed = true;
        out.add(tokenOutcome(c.name(), c.expiresAt(), problem));
      } else {
        out.add(
            new Revocation(
                c.name(),
                c.source(),
                Revocation.Outcome.EXPIRES,
                c.expiresAt(),
                Optional.of(
                    "the control plane that minted it stopped, and its value went with it")));
      }
    }
    if (!tokenNamed && (revoked || problem.isPresent())) {
      out.add(tokenOutcome(runTokenName(runId), expiresAt, problem));
    }
    return List.copyOf(out);
  }

  private static Revocation tokenOutcome(String name, Instant expiresAt, Optional<String> problem) {
    return new Revocation(
        name,
        "run-token",
        problem.isEmpty() ? Revocation.Outcome.REVOKED : Revocation.Outcome.FAILED,
        expiresAt,
        problem);
  }

  /**
   * Revokes the run tokens still valid whose run is no longer live ({@code isLive} false): those a
   * failed revocation or a crash left. Returns them by run id with their expiry; a token that still
   * cannot be revoked is left for the next pass.
   */
  public Map<String, Instant> sweepRunTokens(Predicate<String> isLive, Instant now) {
    Map<String, Instant> revoked = new java.util.TreeMap<>();
    for (TokenInfo token : tokens.list()) {
      String name = token.name();
      if (!name.startsWith(RUN_TOKEN_PREFIX) || !token.activeAt(now)) {
        continue;
      }
      String runId = name.substring(RUN_TOKEN_PREFIX.length());
      if (!token.scopes().equals(Set.of(runScope(runId))) || isLive.test(runId)) {
        continue;
      }
      if (tokens.revoke(name)) {
        revoked.put(runId, token.expiresAt() == null ? now : token.expiresAt());
      }
    }
    return revoked;
  }

  private void revokeQuietly(String runId) {
    try {
      tokens.revoke(runTokenName(runId));
    } catch (RuntimeException e) {
      // The sweep of the reaper's next pass revokes it (sweepRunTokens).
    }
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
