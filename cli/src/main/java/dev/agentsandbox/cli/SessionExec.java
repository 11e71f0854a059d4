package dev.agentsandbox.cli;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicBoolean;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import sun.misc.Signal;

/** {@code agent-sandbox session exec}: one step, streamed, exiting with its status. */
@Command(
    name = "exec",
    mixinStandardHelpOptions = true,
    description = {
      "Run a step in a session, as docker exec runs a command in a container",
      "",
      "Its output streams as it is produced (stdout to stdout, stderr to stderr), each egress"
          + " refusal goes to stderr as `denied: HOST:PORT REASON`, and the command exits with the"
          + " step's exit status. -i passes this command's standard input (UTF-8 text, at most the"
          + " agent's sessions.max_stdin_bytes). Ctrl-C kills the step; --detach starts it in the"
          + " background and prints its number."
    },
    exitCodeListHeading = "%nExit codes:%n",
    exitCodeList = {
      "0-255:the step's own exit status",
      "121:lost the step: the server went away while following it",
      "122:the step ended with its session, or the backend lost it",
      "123:the step was killed (Ctrl-C, DELETE .../steps/N)",
      "124:the step timed out (--timeout)",
      "125:refused before it started (the message says why), or the server unreachable",
      "2:the command line was wrong"
    },
    footerHeading = "%nExamples:%n",
    footer = {
      "  agent-sandbox session exec $id -- pytest -q",
      "  agent-sandbox session exec --cwd app -e CI=1 --timeout 600 $id -- make test",
      "  echo 'print(1)' | agent-sandbox session exec -i $id -- python3 -",
      "  agent-sandbox session exec --detach $id -- python3 -m http.server 8000"
    })
final class SessionExec implements Callable<Integer> {
  @Spec CommandSpec spec;
  @Mixin ApiConnection api;

  @Option(
      names = {"-i", "--interactive"},
      description = "Pass standard input to the step")
  boolean stdin;

  @Option(
      names = {"-w", "--cwd"},
      paramLabel = "DIR",
      description = "Start in DIR (inside /workspace)")
  String cwd;

  @Option(
      names = {"-e", "--env"},
      paramLabel = "KEY=VALUE",
      description = "A variable for this step; repeatable")
  List<String> env = List.of();

  @Option(
      names = "--timeout",
      paramLabel = "SECONDS",
      description = "Kill the step after this long (default 300)")
  Integer timeout;

  @Option(
      names = {"-d", "--detach"},
      description = "Start the step in the background; print its number")
  boolean detach;

  @Parameters(index = "0", paramLabel = "ID", description = "The session's run id")
  String id;

  @Parameters(
      index = "1..*",
      arity = "1..*",
      paramLabel = "COMMAND",
      description = "The command, after --")
  List<String> command;

  /** Seam for tests: what -i reads (standard input when null, read when the command runs). */
  InputStream input;

  @Override
  public Integer call() throws IOException, InterruptedException {
    if (detach && stdin) {
      throw new ParameterException(spec.commandLine(), "-i and --detach exclude each other");
    }
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    Terminal terminal = Terminal.detect(api.env);
    Map<String, Object> body =
        body(spec, command, RunCommand.pairs(spec, "--env", env), cwd, timeout, detach);
    if (stdin) {
      body.put("stdin", text(spec, input != null ? input : System.in));
    }
    try (AdminApi client = api.open(spec)) {
      SessionClient sessions = new SessionClient(client, terminal);
      if (detach) {
        try {
          out.println(sessions.start(id, body).path("step").asInt());
          out.flush();
          return 0;
        } catch (ApiCallException | IOException e) {
          err.println("agent-sandbox session exec: " + e.getMessage());
          err.flush();
          return ExitCodes.REFUSED;
        }
      }
      return run(sessions, id, body, out, err, terminal);
    }
  }

  /**
   * Runs one step streamed and returns its exit code; Ctrl-C asks the server to kill this step
   * (once; a second Ctrl-C leaves without waiting).
   */
  static int run(
      SessionClient sessions,
      String id,
      Map<String, Object> body,
      PrintWriter out,
      PrintWriter err,
      Terminal terminal)
      throws InterruptedException {
    java.util.concurrent.atomic.AtomicInteger started =
        new java.util.concurrent.atomic.AtomicInteger();
    killOnInterrupt(sessions, id, err, started);
    JsonNode result;
    try {
      result = sessions.exec(id, body, out, err, started);
    } catch (ApiCallException e) {
      err.println("agent-sandbox session exec: " + e.getMessage());
      err.flush();
      return ExitCodes.REFUSED;
    } catch (IOException e) {
      err.println("agent-sandbox session exec: " + e.getMessage());
      err.flush();
      return ExitCodes.LOST;
    }
    return ExitCodes.ofStep(result, id, err, terminal);
  }

  /** On Ctrl-C, the step's own kill (once its number is known); a second Ctrl-C leaves. */
  private static void killOnInterrupt(
      SessionClient sessions,
      String id,
      PrintWriter err,
      java.util.concurrent.atomic.AtomicInteger started) {
    AtomicBoolean asked = new AtomicBoolean();
    try {
      Signal.handle(
          new Signal("INT"),
          signal -> {
            if (!asked.compareAndSet(false, true) || started.get() == 0) {
              Runtime.getRuntime().halt(ExitCodes.KILLED);
            }
            int step = started.get();
            Thread.ofVirtual()
                .start(
                    () -> {
                      synchronized (err) {
                        err.println("agent-sandbox: Ctrl-C: killing step " + step + " of " + id);
                        err.flush();
                      }
                      try {
                        sessions.kill(id, step);
                      } catch (IOException | ApiCallException e) {
                        synchronized (err) {
                          err.println("agent-sandbox: " + e.getMessage());
                          err.flush();
                        }
                      } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                      }
                    });
          });
    } catch (IllegalArgumentException e) {
      // SIGINT is ignored (started in the background): nothing to hand over.
    }
  }

  /** The body of {@code POST .../exec}. */
  static Map<String, Object> body(
      CommandSpec spec,
      List<String> command,
      Map<String, String> env,
      String cwd,
      Integer timeout,
      boolean background) {
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("command", command);
    if (!env.isEmpty()) {
      body.put("env", env);
    }
    if (cwd != null) {
      body.put("cwd", cwd);
    }
    if (timeout != null) {
      if (timeout < 1) {
        throw new ParameterException(spec.commandLine(), "--timeout " + timeout + ": at least 1");
      }
      body.put("timeout_seconds", timeout);
    }
    if (background) {
      body.put("background", true);
    }
    return body;
  }

  /** Standard input as UTF-8 text, at most the API's 1 MiB (the agent's cap is the server's). */
  static String text(CommandSpec spec, InputStream in) throws IOException {
    byte[] bytes = in.readNBytes((1 << 20) + 1);
    if (bytes.length > 1 << 20) {
      throw new ParameterException(
          spec.commandLine(),
          "-i: standard input is over 1 MiB (put large input in with session cp)");
    }
    try {
      return StandardCharsets.UTF_8
          .newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(bytes))
          .toString();
    } catch (CharacterCodingException e) {
      throw new ParameterException(
          spec.commandLine(),
          "-i: standard input is not UTF-8 text (put binary input in with session cp)");
    }
  }
}
