package dev.agentsandbox.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.agentsandbox.policy.config.Scopes;
import dev.agentsandbox.server.AgentSandboxServer;
import dev.agentsandbox.store.Store;
import java.io.ByteArrayInputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import picocli.CommandLine;

/** The command line's help, exit codes, output formats and contexts, without a daemon. */
class CommandLineTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @TempDir Path dir;

  record Run(int exit, String out, String err) {}

  static Run run(CommandLine commandLine, String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    commandLine.setOut(new PrintWriter(out));
    commandLine.setErr(new PrintWriter(err));
    return new Run(commandLine.execute(args), out.toString(), err.toString());
  }

  @Test
  void topLevelHelpListsEachCommandOnOneLine() {
    Run help = run(Main.commandLine(), "--help");
    List<String> lines = help.out().lines().toList();
    List<String> commands =
        lines.subList(lines.indexOf("Commands:") + 1, lines.size()).stream()
            .takeWhile(l -> !l.isBlank())
            .toList();
    assertThat(commands)
        .extracting(l -> l.strip().split("\\s+")[0])
        .containsExactly(
            "run",
            "runs",
            "session",
            "artifacts",
            "plan",
            "config",
            "login",
            "mcp",
            "serve",
            "token",
            "audit",
            "drill",
            "proxy",
            "completion",
            "help");
    assertThat(commands).allSatisfy(l -> assertThat(l).startsWith("  ").hasSizeLessThan(81));
  }

  @Test
  void everyCommandsHelpHasAnExample() {
    List<CommandLine> all = new ArrayList<>();
    collect(Main.commandLine(), all);
    assertThat(all).hasSizeGreaterThan(20);
    for (CommandLine command : all) {
      if (command.getCommandName().equals("help")) {
        continue;
      }
      List<String> path = new ArrayList<>();
      for (CommandLine c = command; c.getParent() != null; c = c.getParent()) {
        path.addFirst(c.getCommandName());
      }
      path.add("--help");
      Run help = run(Main.commandLine(), path.toArray(String[]::new));
      assertThat(help.exit()).as("%s", path).isZero();
      assertThat(help.out())
          .as("%s", path)
          .containsPattern(
              "Examples:\\n  agent-sandbox "
                  + String.join(" ", path.subList(0, Math.min(1, path.size() - 1))));
    }
  }

  /** {@code main} runs {@code serve} without the rest of the tree; it must not show. */
  @Test
  void serveAloneHelpsAndFailsExactlyAsServeInTheTree() {
    Run alone = run(Main.serveCommandLine(), "--help");
    Run inTree = run(Main.commandLine(), "serve", "--help");
    assertThat(alone.exit()).isZero();
    assertThat(alone.out()).startsWith("Usage: agent-sandbox serve ").isEqualTo(inTree.out());

    Run badOption = run(Main.serveCommandLine(), "--no-such-option");
    Run badInTree = run(Main.commandLine(), "serve", "--no-such-option");
    assertThat(badOption.exit()).isEqualTo(Main.USAGE).isEqualTo(badInTree.exit());
    assertThat(badOption.err()).isEqualTo(badInTree.err()).contains("--no-such-option");

    String db = "jdbc:sqlite:" + dir.resolve("store.db");
    String[] failing = {
      "--listen", "127.0.0.1:0", "--db", db, "--data-dir", dir.toString(), "--microvm-accel", "warp"
    };
    Run failed = run(Main.serveCommandLine(), failing);
    List<String> inTreeArgs = new ArrayList<>(List.of("serve"));
    inTreeArgs.addAll(List.of(failing));
    Run failedInTree = run(Main.commandLine(), inTreeArgs.toArray(String[]::new));
    assertThat(failed.exit()).isEqualTo(Main.FAILED).isEqualTo(failedInTree.exit());
    assertThat(failed.err())
        .isEqualTo(failedInTree.err())
        .isEqualTo("agent-sandbox serve: --microvm-accel warp: expected kvm, tcg or off\n");
  }

  private static void collect(CommandLine command, List<CommandLine> into) {
    into.add(command);
    command.getSubcommands().values().forEach(sub -> collect(sub, into));
  }

  @Test
  void completionPrintsPicocliScriptsForBashAndZsh() {
    Run bash = run(Main.commandLine(), "completion", "bash");
    assertThat(bash.exit()).isZero();
    assertThat(bash.out()).contains("complete -F").contains("runs").contains("--no-headers");
    Run zsh = run(Main.commandLine(), "completion", "zsh");
    assertThat(zsh.out()).contains("bashcompinit");
    assertThat(run(Main.commandLine(), "completion", "fish").exit()).isEqualTo(Main.USAGE);
  }

  /** How each way a run ends becomes the exit code, and when the CLI says why. */
  @ParameterizedTest(name = "{0} with exit status {1} exits {2}")
  @CsvSource({
    "exited, 0, 0, ''",
    "exited, 7, 7, ''",
    "exited, 125, 125, ''",
    "deadline, , 124, timed out",
    "killed, 137, 123, was killed",
    "failed, , 122, failed: the network could not be created",
  })
  void aRunsEndBecomesTheExitCode(String status, Integer exitStatus, int code, String said)
      throws Exception {
    JsonNode run =
        JSON.readTree(
            JSON.writeValueAsString(
                exitStatus == null
                    ? Map.of("status", status, "detail", "the network could not be created")
                    : Map.of("status", status, "exit_status", exitStatus)));
    StringWriter err = new StringWriter();
    int exit = ExitCodes.of(run, "r1", new PrintWriter(err), new Terminal(false, false));
    assertThat(exit).isEqualTo(code);
    if (said.isEmpty()) {
      assertThat(err.toString()).isEmpty();
    } else {
      assertThat(err.toString()).contains("run r1 " + said).contains("(exit code " + code + ")");
    }
  }

  @Test
  void tablesPadEveryColumnToItsWidestCell() {
    Printer printer = new Printer();
    StringWriter out = new StringWriter();
    printer.table(
        new PrintWriter(out),
        List.of("RUN ID", "AGENT", "STATUS"),
        List.of(List.of("abc", "a-long-agent", "running"), List.of("abcdefgh", "b", "exited")));
    assertThat(out.toString())
        .isEqualTo(
            "RUN ID    AGENT         STATUS\n"
                + "abc       a-long-agent  running\n"
                + "abcdefgh  b             exited\n");
    printer.noHeaders = true;
    StringWriter bare = new StringWriter();
    printer.table(new PrintWriter(bare), List.of("A", "B"), List.of(List.of("x", "y")));
    assertThat(bare.toString()).isEqualTo("x  y\n");
  }

  @ParameterizedTest(name = "{0} s is {1}")
  @CsvSource({
    "0, 0s",
    "59, 59s",
    "60, 1m",
    "192, 3m12s",
    "3600, 1h",
    "18240, 5h4m",
    "183600, 2d3h"
  })
  void agesReadLikeKubectls(long seconds, String age) {
    assertThat(Printer.age(Duration.ofSeconds(seconds))).isEqualTo(age);
  }

  @Test
  void loginFromStandardInputKeepsTheTokenInAnOwnerOnlyFileNeverInTheConfig() throws Exception {
    try (Store store = Store.open("jdbc:sqlite:" + dir.resolve("store.db"));
        AgentSandboxServer server =
            AgentSandboxServer.start(
                new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), store)) {
      String token = store.tokens().create("reader", Set.of(Scopes.READ), null).secret();
      Path config = dir.resolve("home").resolve("config.yaml");
      Map<String, String> env = Map.of(Contexts.ENV, config.toString());
      CommandLine commandLine = Main.commandLine();
      LoginCommand login = commandLine.getSubcommands().get("login").getCommand();
      login.env = env;
      login.stdin = new ByteArrayInputStream((token + "\n").getBytes(StandardCharsets.UTF_8));
      Run done =
          run(
              commandLine,
              "login",
              "--url",
              server.baseUrl(),
              "--token-file",
              "-",
              "--name",
              "lab");
      assertThat(done.exit()).as(done.err()).isZero();
      assertThat(done.out()).contains("token accepted");
      String saved = Files.readString(config);
      assertThat(saved).doesNotContain(token).contains("current-context: lab");
      Path tokenFile = config.getParent().resolve("tokens").resolve("lab");
      assertThat(Files.readString(tokenFile).strip()).isEqualTo(token);
      assertThat(Files.getPosixFilePermissions(tokenFile))
          .containsExactlyInAnyOrder(
              PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE);
      assertThat(Files.getPosixFilePermissions(tokenFile.getParent()))
          .as("the folder of saved tokens")
          .containsExactlyInAnyOrder(
              PosixFilePermission.OWNER_READ,
              PosixFilePermission.OWNER_WRITE,
              PosixFilePermission.OWNER_EXECUTE);

      // The context is then used without any token on the command line.
      CommandLine list = Main.commandLine();
      CommandLine runs = list.getSubcommands().get("runs").getSubcommands().get("list");
      ((RunsCommand.ListRuns) runs.getCommand()).api.env = env;
      Run listed = run(list, "runs", "list", "-o", "json");
      assertThat(listed.exit()).as(listed.err()).isZero();
      assertThat(JSON.readTree(listed.out()).path("runs").isArray()).isTrue();

      // A wrong token is refused at login, and nothing is saved.
      CommandLine again = Main.commandLine();
      LoginCommand wrong = again.getSubcommands().get("login").getCommand();
      wrong.env = env;
      wrong.stdin = new ByteArrayInputStream("not-a-token".getBytes(StandardCharsets.UTF_8));
      Run refused =
          run(again, "login", "--url", server.baseUrl(), "--token-file", "-", "--name", "bad");
      assertThat(refused.exit()).isEqualTo(Main.FAILED);
      assertThat(refused.err()).contains("invalid_token");
      assertThat(Files.readString(config)).doesNotContain("bad");
    }
  }

  @Test
  void noOptionTakesATokenOnTheCommandLine() {
    Run refused = run(Main.commandLine(), "runs", "list", "--token", "secret-value");
    assertThat(refused.exit()).isEqualTo(Main.USAGE);
    assertThat(refused.err()).contains("Unknown option");
  }
}
