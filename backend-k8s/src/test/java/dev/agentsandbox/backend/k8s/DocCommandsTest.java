package dev.agentsandbox.backend.k8s;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Every command docs/backends/k8s.md shows is one a script in deploy/k3s/ runs, under the rule
 * stated at the top of that page: an invocation of a script whose {@code --help} names each option
 * and variable it is given, or a command found in a script as written there (outside comments,
 * continuations joined, blanks collapsed). So the walk-through and the scripts cannot drift.
 */
class DocCommandsTest {
  private static final Path ROOT = Path.of(System.getProperty("basedir", "."), "..").normalize();
  private static final Path DOC = ROOT.resolve("docs/backends/k8s.md");
  private static final Path SCRIPTS = ROOT.resolve("deploy/k3s");
  private static final Path SETUP = SCRIPTS.resolve("setup.sh");
  private static final Pattern FENCE = Pattern.compile("^```\\s*(\\S*)\\s*$");
  private static final List<String> SHELL_BLOCKS = List.of("sh", "bash", "shell");
  private static final Pattern ASSIGNMENT = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*=\\S*");
  // The in-pod check: its text must equal the backend's (FenceProbeFileTest), and it takes no
  // arguments, so it has no --help to ask.
  private static final String IN_POD_CHECK = "runtime-check.sh";

  @Test
  void everyCommandOnThePageIsOneAScriptRuns() throws Exception {
    List<String> commands = commands(Files.readString(DOC));
    List<Path> scripts = scripts();
    StringBuilder scriptText = new StringBuilder();
    for (Path script : scripts) {
      scriptText.append(logicalLines(Files.readString(script))).append('\n');
    }
    List<String> problems = new ArrayList<>();
    int invocations = 0;
    for (String command : commands) {
      if (isInvocation(command)) {
        invocations++;
        problems.addAll(invocationProblems(command));
      } else if (!runIn(scriptText.toString(), command)) {
        problems.add("no script in deploy/k3s/ runs: " + command);
      }
    }
    assertThat(problems).as("commands in %s", DOC).isEmpty();
    // Not vacuous: the walk-through has its steps' invocations and the commands behind them.
    assertThat(invocations).isGreaterThanOrEqualTo(9);
    assertThat(commands.size() - invocations).isGreaterThanOrEqualTo(20);
  }

  @Test
  void thePageWalksEveryStepOfSetup() throws Exception {
    String usage = run("bash", SETUP.toString(), "--help").output();
    String steps = usage.substring(usage.indexOf("Steps:"));
    List<String> names =
        Pattern.compile("(?m)^  ([a-z-]+)  ")
            .matcher(steps)
            .results()
            .map(m -> m.group(1))
            .toList();
    assertThat(names).contains("node", "gvisor", "bundle", "admission-check", "plan");
    List<String> commands = commands(Files.readString(DOC));
    for (String step : names) {
      assertThat(commands)
          .as("the page runs deploy/k3s/setup.sh %s", step)
          .anyMatch(c -> c.matches("(\\S+=\\S+ )*deploy/k3s/setup\\.sh " + step + "( .*)?"));
    }
  }

  @Test
  void everyScriptParsesAndAnswersHelp() throws Exception {
    List<Path> scripts = scripts();
    assertThat(scripts).extracting(p -> p.getFileName().toString()).contains("setup.sh");
    for (Path script : scripts) {
      Result syntax = run("bash", "-n", script.toString());
      assertThat(syntax.status()).as("bash -n %s: %s", script, syntax.output()).isZero();
      if (!script.getFileName().toString().equals(IN_POD_CHECK)) {
        assertThat(Files.isExecutable(script)).as("%s is executable", script).isTrue();
        Result help = run("bash", script.toString(), "--help");
        assertThat(help.status()).as("%s --help: %s", script, help.output()).isZero();
        assertThat(help.output()).as("%s --help", script).contains("Usage");
      }
    }
    assertThat(run("bash", SETUP.toString(), "no-such-step").status()).isEqualTo(64);
    assertThat(run("bash", SETUP.toString()).status()).isEqualTo(64);
    assertThat(run("bash", SETUP.toString(), "plan", "--no-such-option").status()).isEqualTo(64);
  }

  /** The rule's matching, shown on cases it must accept and refuse. */
  @Test
  void commandsMatchOnlyWholeCommandsOutsideComments() {
    String script =
        logicalLines(
            """
            # kubectl delete namespace kube-system
            out="$(kubectl get nodes -o wide 2>&1)"
            kubectl apply -f deploy/k3s/sandbox/kyverno/ \\
                --dry-run=server   # a note
            """);
    assertThat(runIn(script, "kubectl get nodes -o wide")).isTrue();
    assertThat(runIn(script, "kubectl apply -f deploy/k3s/sandbox/kyverno/ --dry-run=server"))
        .isTrue();
    assertThat(runIn(script, "kubectl delete namespace kube-system")).as("a comment").isFalse();
    assertThat(runIn(script, "kubectl get nodes -o")).as("part of an argument").isFalse();
    assertThat(runIn(script, "ubectl get nodes -o wide")).as("part of a word").isFalse();
    assertThat(runIn(script, "kubectl apply -f deploy/k3s/sandbox/kyverno/"))
        .as("an option left off")
        .isFalse();
    assertThat(
            commands(
                """
                ```sh
                kubectl get nodes \\
                  -o wide   # every node
                #   expect: a note
                ```
                ```yaml
                kind: Pod
                ```
                """))
        .containsExactly("kubectl get nodes -o wide");
  }

  /** The commands of the page's shell blocks, continuations joined, comments dropped. */
  static List<String> commands(String markdown) {
    List<String> commands = new ArrayList<>();
    String kind = null;
    StringBuilder block = new StringBuilder();
    for (String line : markdown.split("\n", -1)) {
      Matcher fence = FENCE.matcher(line.strip());
      if (fence.matches() && kind == null) {
        kind = fence.group(1);
        block.setLength(0);
      } else if (fence.matches()) {
        if (SHELL_BLOCKS.contains(kind)) {
          Arrays.stream(logicalLines(block.toString()).split("\n"))
              .filter(l -> !l.isEmpty())
              .forEach(commands::add);
        }
        kind = null;
      } else if (kind != null) {
        block.append(line).append('\n');
      }
    }
    assertThat(kind).as("an unclosed code block").isNull();
    return commands;
  }

  /**
   * Shell text as logical lines: {@code \} continuations joined, comments dropped, blanks collapsed
   * to one space, each line trimmed.
   */
  static String logicalLines(String text) {
    String joined = text.replaceAll("\\\\\\n[ \\t]*", " ");
    StringBuilder out = new StringBuilder();
    for (String line : joined.split("\n", -1)) {
      out.append(withoutComment(line).replaceAll("[ \\t]+", " ").strip()).append('\n');
    }
    return out.toString();
  }

  /** The line up to a {@code #} that starts a word outside quotes. */
  private static String withoutComment(String line) {
    boolean single = false;
    boolean dbl = false;
    for (int i = 0; i < line.length(); i++) {
      char c = line.charAt(i);
      if (c == '\\' && !single) {
        i++;
      } else if (c == '\'' && !dbl) {
        single = !single;
      } else if (c == '"' && !single) {
        dbl = !dbl;
      } else if (c == '#'
          && !single
          && !dbl
          && (i == 0 || Character.isWhitespace(line.charAt(i - 1)))) {
        return line.substring(0, i);
      }
    }
    return line;
  }

  /**
   * Whether the scripts' logical lines hold the command as a whole command: it starts a line, or
   * follows a blank or an operator ({@code ;|&(}), and ends the line or meets an operator or a
   * redirection, so a command cut short (an argument left off) does not match.
   */
  static boolean runIn(String scriptLines, String command) {
    return Pattern.compile(
            "(?m)(?:^|[\\s;|&(])" + Pattern.quote(command) + "(?=[ ]*(?:$|[;|&)]|[0-9]*>))")
        .matcher(scriptLines)
        .find();
  }

  private static boolean isInvocation(String command) {
    String program = program(command);
    return program.startsWith("deploy/") && program.endsWith(".sh");
  }

  private static List<String> words(String command) {
    return List.of(command.split(" "));
  }

  private static String program(String command) {
    return words(command).stream()
        .filter(w -> !ASSIGNMENT.matcher(w).matches())
        .findFirst()
        .orElse("");
  }

  /** An invocation's script exists, and its --help names every option and variable given. */
  private static List<String> invocationProblems(String command) throws Exception {
    List<String> problems = new ArrayList<>();
    List<String> words = words(command);
    int at = words.indexOf(program(command));
    Path script = ROOT.resolve(words.get(at)).normalize();
    if (!script.startsWith(SCRIPTS) || !Files.isRegularFile(script)) {
      problems.add("no script " + words.get(at) + " in deploy/k3s/: " + command);
      return problems;
    }
    List<String> help = new ArrayList<>(List.of("bash", script.toString()));
    if (at + 1 < words.size() && !words.get(at + 1).startsWith("-")) {
      help.add(words.get(at + 1));
    }
    help.add("--help");
    Result answer = run(help.toArray(String[]::new));
    if (answer.status() != 0) {
      problems.add(String.join(" ", help) + " exits " + answer.status() + ": " + command);
      return problems;
    }
    for (int i = 0; i < words.size(); i++) {
      String word = words.get(i);
      String named =
          i < at
              ? word.substring(0, word.indexOf('='))
              : word.startsWith("--") ? word.split("=")[0] : null;
      if (named != null && !answer.output().contains(named)) {
        problems.add(
            String.join(" ", help.subList(1, help.size()))
                + " does not name "
                + named
                + ": "
                + command);
      }
    }
    return problems;
  }

  private static List<Path> scripts() throws IOException {
    try (Stream<Path> files = Files.walk(ROOT.resolve("deploy"))) {
      return files.filter(p -> p.toString().endsWith(".sh")).sorted().toList();
    }
  }

  private record Result(int status, String output) {}

  private static Result run(String... command) throws Exception {
    Path output = Files.createTempFile("doc-commands", ".out");
    try {
      Process process =
          new ProcessBuilder(command)
              .redirectErrorStream(true)
              .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
              .redirectOutput(output.toFile())
              .start();
      if (!process.waitFor(30, TimeUnit.SECONDS)) {
        process.destroyForcibly();
        throw new AssertionError(String.join(" ", command) + " did not end within 30 s");
      }
      return new Result(process.exitValue(), Files.readString(output, UTF_8));
    } finally {
      Files.deleteIfExists(output);
    }
  }
}
