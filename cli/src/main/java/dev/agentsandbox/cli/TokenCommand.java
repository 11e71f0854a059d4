package dev.agentsandbox.cli;

import dev.agentsandbox.policy.config.AgentGrant;
import dev.agentsandbox.policy.config.Scopes;
import dev.agentsandbox.store.Store;
import dev.agentsandbox.store.TokenInfo;
import java.io.PrintWriter;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code agent-sandbox token create|list|revoke}: API tokens, straight on the store. */
@Command(
    name = "token",
    footerHeading = "%nExamples:%n",
    footer = {
      "  agent-sandbox token create --name ci --scopes agent_sandbox.read,agent_sandbox.run > ci.token",
      "  agent-sandbox token create --name team-a --scopes agent_sandbox.read,agent_sandbox.run"
          + " --agents helper,planner > team-a.token"
    },
    mixinStandardHelpOptions = true,
    description = "Create, list and revoke API tokens (only hashes are stored)",
    subcommands = {
      TokenCommand.Create.class,
      TokenCommand.ListTokens.class,
      TokenCommand.Revoke.class
    })
final class TokenCommand implements Runnable {
  @Spec CommandSpec spec;

  @Override
  public void run() {
    throw new ParameterException(spec.commandLine(), "name a subcommand: create, list or revoke");
  }

  private static final Pattern DURATION = Pattern.compile("([1-9][0-9]{0,5})([mhd])");

  /**
   * Who the audit rows of {@code token create} and {@code revoke} name: these commands open the
   * store directly, with no API token, so the operating-system account that ran them ({@code
   * cli:alice}).
   */
  static String actor() {
    return "cli:" + System.getProperty("user.name", "unknown");
  }

  /** Parses {@code 90m}, {@code 12h}, {@code 30d}. */
  static Duration duration(String text) {
    Matcher matcher = DURATION.matcher(text);
    if (!matcher.matches()) {
      throw new IllegalArgumentException(
          "--expires '" + text + "' is not a duration such as 90m, 12h or 30d");
    }
    long amount = Long.parseLong(matcher.group(1));
    return switch (matcher.group(2)) {
      case "m" -> Duration.ofMinutes(amount);
      case "h" -> Duration.ofHours(amount);
      default -> Duration.ofDays(amount);
    };
  }

  @Command(
      name = "create",
      footerHeading = "%nExamples:%n",
      footer = {
        "  agent-sandbox token create --name alice --scopes agent_sandbox.read,agent_sandbox.configure --expires 30d > alice.token",
        "  agent-sandbox token create --name team-a --scopes agent_sandbox.read,agent_sandbox.run --agents helper,planner > team-a.token"
      },
      mixinStandardHelpOptions = true,
      description = {
        "Creates a token and prints it as the only line on stdout; it is not shown again.",
        "Audited as agent_sandbox.token.create (name, scopes, agents, expiry; never the token).",
        "Scopes: agent_sandbox.read, agent_sandbox.configure, agent_sandbox.run, audit.read,"
            + " governance.weaken.",
        "With --agents the token sees and touches only those agents' runs, sessions, plans and"
            + " settings (another agent's run is answered as if it did not exist); it may hold"
            + " only agent_sandbox.read and agent_sandbox.run."
      })
  static final class Create implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Option(names = "--name", required = true, description = "Token name (shown in audit rows)")
    String name;

    @Option(
        names = "--scopes",
        required = true,
        split = ",",
        paramLabel = "SCOPE",
        description = "Comma-separated scopes")
    List<String> scopes;

    @Option(
        names = "--agents",
        split = ",",
        paramLabel = "AGENT",
        description = "Comma-separated agents the token is limited to (default: every agent)")
    List<String> agents;

    @Option(
        names = "--expires",
        paramLabel = "DURATION",
        description = "Lifetime such as 90m, 12h, 30d (default: never)")
    String expires;

    @Mixin StoreOptions store;

    @Override
    public Integer call() {
      Set<String> wanted = new LinkedHashSet<>();
      for (String scope : scopes) {
        String trimmed = scope.trim();
        if (!Scopes.ALL.contains(trimmed)) {
          throw new ParameterException(
              spec.commandLine(),
              "unknown scope '" + trimmed + "' (known: " + String.join(", ", Scopes.ALL) + ")");
        }
        wanted.add(trimmed);
      }
      AgentGrant grant = grant(wanted);
      Instant expiresAt;
      try {
        expiresAt = expires == null ? null : Instant.now().plus(duration(expires));
      } catch (IllegalArgumentException e) {
        throw new ParameterException(spec.commandLine(), e.getMessage());
      }
      try (Store opened = store.open()) {
        String secret = opened.tokens().create(name, wanted, grant, expiresAt, actor()).secret();
        PrintWriter out = spec.commandLine().getOut();
        out.println(secret);
        out.flush();
      }
      return 0;
    }

    /** {@code --agents} as a grant, refused with every problem before the store is opened. */
    private AgentGrant grant(Set<String> scopes) {
      if (agents == null) {
        return AgentGrant.EVERY;
      }
      List<String> named = agents.stream().map(String::trim).toList();
      List<String> problems = new java.util.ArrayList<>(AgentGrant.problems(named));
      List<String> wide = Scopes.instanceWide(scopes);
      if (!wide.isEmpty()) {
        problems.add(
            "a token limited to agents may hold only agent_sandbox.read and agent_sandbox.run, not "
                + String.join(", ", wide)
                + " (those scopes are instance-wide: use a token of every agent)");
      }
      if (!problems.isEmpty()) {
        throw new ParameterException(
            spec.commandLine(),
            "--agents " + String.join(",", agents) + ": " + String.join("; ", problems));
      }
      return AgentGrant.only(named);
    }
  }

  @Command(
      name = "list",
      footerHeading = "%nExamples:%n",
      footer = {"  agent-sandbox token list"},
      mixinStandardHelpOptions = true,
      description = "Lists tokens (never their secrets); AGENTS is * for a token of every agent.")
  static final class ListTokens implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin StoreOptions store;

    @Override
    public Integer call() {
      PrintWriter out = spec.commandLine().getOut();
      Instant now = Instant.now();
      try (Store opened = store.open()) {
        out.printf(
            "%-24s %-8s %-24s %-24s %-20s %s%n",
            "NAME", "STATUS", "CREATED", "EXPIRES", "AGENTS", "SCOPES");
        for (TokenInfo token : opened.tokens().list()) {
          String status =
              token.revokedAt() != null ? "revoked" : token.activeAt(now) ? "active" : "expired";
          out.printf(
              "%-24s %-8s %-24s %-24s %-20s %s%n",
              token.name(),
              status,
              token.createdAt(),
              token.expiresAt() == null ? "never" : token.expiresAt().toString(),
              token.agents().limited() ? String.join(",", token.agents().named()) : "*",
              String.join(",", token.scopes()));
        }
      }
      out.flush();
      return 0;
    }
  }

  @Command(
      name = "revoke",
      footerHeading = "%nExamples:%n",
      footer = {"  agent-sandbox token revoke alice"},
      mixinStandardHelpOptions = true,
      description =
          "Revokes the active token with this name; audited as agent_sandbox.token.revoke.")
  static final class Revoke implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Parameters(paramLabel = "NAME", description = "Token name")
    String name;

    @Mixin StoreOptions store;

    @Override
    public Integer call() {
      try (Store opened = store.open()) {
        if (!opened.tokens().revoke(name, actor())) {
          spec.commandLine()
              .getErr()
              .println("agent-sandbox token revoke: no active token named '" + name + "'");
          return Main.FAILED;
        }
      }
      spec.commandLine().getOut().println("revoked " + name);
      return 0;
    }
  }
}
