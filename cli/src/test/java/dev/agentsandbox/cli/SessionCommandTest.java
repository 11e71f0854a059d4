package dev.agentsandbox.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.policy.config.Scopes;
import dev.agentsandbox.runs.OperatorEgress;
import dev.agentsandbox.runs.RunSettings;
import dev.agentsandbox.runs.local.LocalSessionBackend;
import dev.agentsandbox.server.AgentSandboxServer;
import dev.agentsandbox.server.RunWiring;
import dev.agentsandbox.store.Store;
import dev.agentsandbox.testing.api.ApiClient;
import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code session open|exec|cp|close|steps} and {@code run --input} in this JVM against a real
 * server on loopback whose backend is the runs module's test backend (local processes in a
 * temporary folder standing in for a sandbox): exit codes, streams, files both ways with their
 * hashes, a folder that comes back without the link the workload planted.
 */
class SessionCommandTest {
  @TempDir Path dir;
  Store store;
  AgentSandboxServer server;
  Path tokenFile;

  record Run(int exit, String out, String err) {}

  @BeforeEach
  void start() throws Exception {
    store = Store.open("jdbc:sqlite:" + dir.resolve("store.db"));
    server =
        AgentSandboxServer.start(
            new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
            store,
            new RunWiring(
                List.of(
                    new LocalSessionBackend("docker", dir.resolve("sandboxes"), Clock.systemUTC())),
                OperatorEgress.NONE,
                RunSettings.defaults("session-cli").withSpool(dir),
                RunWiring.every(Duration.ofHours(1))));
    String admin = store.tokens().create("admin", Scopes.ALL, null).secret();
    tokenFile = dir.resolve("token");
    Files.writeString(tokenFile, admin);
    ApiClient.Answer put =
        new ApiClient(server.baseUrl())
            .put(
                AdminApi.BASE,
                admin,
                "{\"enabled\": true, \"reason\": \"cli\", \"agents\": {\"helper\": {}}}");
    assertThat(put.status()).as(put.body()).isEqualTo(200);
  }

  @AfterEach
  void stop() {
    server.close();
    store.close();
  }

  Run run(String... args) {
    return run(null, args);
  }

  Run run(InputStream stdin, String... args) {
    List<String> all = new ArrayList<>(List.of(args));
    int at = all.indexOf("--") >= 0 ? all.indexOf("--") : all.size();
    // Connection options go after the subcommand's name(s), before its own arguments.
    int name = args[0].equals("session") ? 2 : 1;
    all.addAll(name, List.of("--url", server.baseUrl(), "--token-file", tokenFile.toString()));
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine commandLine = Main.commandLine();
    commandLine.setOut(new PrintWriter(out));
    commandLine.setErr(new PrintWriter(err));
    InputStream was = System.in;
    if (stdin != null) {
      System.setIn(stdin);
    }
    try {
      return new Run(
          commandLine.execute(all.toArray(String[]::new)), out.toString(), err.toString());
    } finally {
      System.setIn(was);
    }
  }

  @Test
  void aSessionIsWorkedInAsWithDockerExecAndCp() throws Exception {
    Run opened = run("session", "open", "--agent", "helper", "--idle", "600");
    assertThat(opened.exit()).as(opened.err()).isZero();
    String id = opened.out().strip();
    assertThat(id).matches("[a-z0-9]+");

    Path project = Files.createDirectories(dir.resolve("project/src"));
    Files.writeString(project.resolve("calc.py"), "def add(a, b):\n    return a + b\n");
    Path script = dir.resolve("project/check.sh");
    Files.writeString(
        script, "grep -q 'a + b' src/calc.py && echo checked && echo warned >&2; exit 4\n");
    Run in = run("session", "cp", dir.resolve("project").toString(), id + ":app");
    assertThat(in.exit()).as(in.err()).isZero();
    assertThat(in.out()).contains("put 2 files under /workspace/app");

    Run step = run("session", "exec", "--cwd", "app", id, "--", "sh", "check.sh");
    assertThat(step.exit()).as("the step's own exit status").isEqualTo(4);
    assertThat(step.out()).isEqualTo("checked\n");
    assertThat(step.err()).isEqualTo("warned\n");

    Run fed =
        run(
            new ByteArrayInputStream("from stdin\n".getBytes(StandardCharsets.UTF_8)),
            "session",
            "exec",
            "-i",
            id,
            "--",
            "sh",
            "-c",
            "cat > app/fed.txt; cat app/fed.txt");
    assertThat(fed.exit()).as(fed.err()).isZero();
    assertThat(fed.out()).isEqualTo("from stdin\n");

    Run slow = run("session", "exec", "--timeout", "1", id, "--", "sleep", "30");
    assertThat(slow.exit()).isEqualTo(ExitCodes.TIMED_OUT);
    assertThat(slow.err()).contains("timed out");

    Run detached = run("session", "exec", "--detach", id, "--", "sleep", "30");
    assertThat(detached.out().strip()).isEqualTo("4");

    run("session", "exec", id, "--", "sh", "-c", "ln -s /etc app/etc-link");
    Path back = dir.resolve("back");
    Run out = run("session", "cp", id + ":app", back.toString());
    assertThat(out.exit()).as(out.err()).isZero();
    assertThat(Files.readString(back.resolve("src/calc.py"))).contains("a + b");
    assertThat(Files.readString(back.resolve("fed.txt"))).isEqualTo("from stdin\n");
    assertThat(Files.exists(back.resolve("etc-link"), java.nio.file.LinkOption.NOFOLLOW_LINKS))
        .as("the link the workload planted did not come back")
        .isFalse();
    Run one = run("session", "cp", id + ":app/fed.txt", dir.toString());
    assertThat(one.exit()).as(one.err()).isZero();
    assertThat(Files.readString(dir.resolve("fed.txt"))).isEqualTo("from stdin\n");

    Run steps = run("session", "steps", id);
    assertThat(steps.out().lines().skip(1).map(l -> l.split("\\s+")[0]))
        .containsExactly("1", "2", "3", "4", "5");
    assertThat(steps.out()).contains("timeout").contains("sh check.sh");

    Run closed = run("session", "close", id);
    assertThat(closed.exit()).as(closed.err()).isZero();
    assertThat(closed.out()).contains("closed (closed) after 5 steps");
    Run late = run("session", "exec", id, "--", "true");
    assertThat(late.exit()).isEqualTo(ExitCodes.REFUSED);
    assertThat(late.err()).contains("run_ended").contains("it has ended");
  }

  @Test
  void runWithInputsIsASessionUsedForOneStep() throws Exception {
    Path inputs = Files.createDirectories(dir.resolve("inputs"));
    Files.writeString(inputs.resolve("data.txt"), "forty-two\n");
    Path extra = Files.writeString(dir.resolve("extra.cfg"), "mode=strict\n");

    Run done =
        run(
            "run",
            "--agent",
            "helper",
            "--input",
            inputs.toString(),
            "--input-file",
            extra + "=conf/app.cfg",
            "--",
            "sh",
            "-c",
            "cat data.txt conf/app.cfg; exit 3");

    assertThat(done.exit()).as(done.err()).isEqualTo(3);
    assertThat(done.out()).isEqualTo("forty-two\nmode=strict\n");
    var runs = store.runs().recent(10);
    assertThat(runs).hasSize(1);
    assertThat(runs.get(0).isSession()).isTrue();
    assertThat(runs.get(0).status().wireName()).isEqualTo("closed");
    assertThat(store.steps().count(runs.get(0).runId())).isEqualTo(1);
    assertThat(
            run("run", "--agent", "helper", "--input", inputs.toString(), "--detach", "--", "true")
                .exit())
        .isEqualTo(Main.USAGE);
  }
}
