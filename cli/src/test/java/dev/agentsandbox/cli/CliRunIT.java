package dev.agentsandbox.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import com.github.dockerjava.api.DockerClient;
import dev.agentsandbox.backend.docker.DockerClients;
import dev.agentsandbox.testing.DockerObjects;
import dev.agentsandbox.testing.api.ApiClient;
import dev.agentsandbox.testing.api.CheckingRelay;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.awaitility.Awaitility;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The command line as a person and a script use it: the packaged jar as a process, against a real
 * {@code serve} process with the Docker backend. Five short runs in all (the daemon is shared).
 */
class CliRunIT {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Pattern KILLING = Pattern.compile("killing run ([a-z0-9]{20})");
  private static final Duration RUN_LIMIT = Duration.ofSeconds(150);

  private static Process serve;
  private static Path dir;

  /** The control plane's data directory, which serve creates (docs/store.md: 0700, files 0600). */
  private static Path data;

  private static String base;

  /** The test's own requests to the admin API, each checked against openapi.json. */
  private static ApiClient client;

  private static String token;
  private static Map<String, String> env;
  private static final List<String> runIds = new ArrayList<>();

  @BeforeAll
  static void startServe() throws Exception {
    assertThat(CliProcess.JAR).as("the packaged CLI jar (failsafe runs after package)").exists();
    dir = Files.createTempDirectory("asb-cli-it");
    data = dir.resolve("data");
    String java = ProcessHandle.current().info().command().orElse("java");
    serve =
        new ProcessBuilder(
                java,
                "--enable-native-access=ALL-UNNAMED",
                "-jar",
                CliProcess.JAR.toString(),
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--db",
                "jdbc:sqlite:" + data.resolve("store.db"),
                "--data-dir",
                data.toString(),
                "--instance-id",
                "cli-it-" + ProcessHandle.current().pid())
            .redirectErrorStream(true)
            .start();
    base = CliProcess.awaitListening(serve);
    client = new ApiClient(base);
    token = Files.readString(data.resolve("admin-token"), StandardCharsets.UTF_8).strip();
    env = Map.of("AGENT_SANDBOX_CONFIG", dir.resolve("cli.yaml").toString(), "NO_COLOR", "1");
    CliProcess login =
        CliProcess.run(
            env,
            "",
            Duration.ofSeconds(60),
            "login",
            "--url",
            base,
            "--token-file",
            data.resolve("admin-token").toString(),
            "--name",
            "it");
    assertThat(login.await(Duration.ofSeconds(1))).as(login.toString()).isZero();
    assertThat(Files.readString(dir.resolve("cli.yaml"))).doesNotContain(token);
    Path config = dir.resolve("sandbox.yaml");
    Files.writeString(
        config,
        """
        enabled: true
        backend: docker
        agents:
          cli:
            allow: []
            image: agent-sandbox/workload:dev
            ttl_seconds: 120
            resources: {cpus: 1, memory_mb: 256, pids: 128}
        version: 0
        """);
    CliProcess apply =
        CliProcess.run(
            env,
            "",
            Duration.ofSeconds(60),
            "config",
            "apply",
            "-f",
            config.toString(),
            "--reason",
            "CliRunIT");
    assertThat(apply.await(Duration.ofSeconds(1))).as(apply.toString()).isZero();
    assertThat(apply.outText()).contains("version 1");
  }

  @AfterAll
  static void stop() throws Exception {
    if (serve != null && serve.isAlive()) {
      serve.destroy();
      if (!serve.waitFor(60, TimeUnit.SECONDS)) {
        serve.destroyForcibly();
      }
    }
    // After real use (runs, artifacts kept, tokens, the store's WAL): nothing serve wrote is
    // readable by another local user.
    List<String> readable = new ArrayList<>();
    try (var all = Files.walk(data)) {
      for (Path p : all.toList()) {
        String mode =
            java.nio.file.attribute.PosixFilePermissions.toString(
                Files.getPosixFilePermissions(p, java.nio.file.LinkOption.NOFOLLOW_LINKS));
        if (!mode.equals(Files.isDirectory(p) ? "rwx------" : "rw-------")) {
          readable.add(dir.relativize(p) + " " + mode);
        }
      }
    }
    assertThat(readable).as("what serve wrote, by mode").isEmpty();
    assertThat(data.resolve("artifacts"))
        .as("artifacts were kept, so they were checked")
        .isDirectory();
    DockerClient docker = DockerClients.fromEnvironment();
    for (String runId : runIds) {
      assertThat(DockerObjects.ofRun(docker, runId))
          .as("containers, networks and volumes left by run " + runId)
          .isEmpty();
    }
  }

  @Test
  void runStreamsLivePrintsTheRefusalWhileTheRunContinuesAndExitsWithTheWorkloadsStatus()
      throws Exception {
    try (CliProcess cli =
        CliProcess.start(
            env,
            "run",
            "--agent",
            "cli",
            "--",
            "sh",
            "-c",
            "echo first; curl -s -o /dev/null -w 'HTTP %{http_code}\\n' http://api.denied.test/;"
                + " sleep 4; echo last; exit 7")) {
      CliProcess.Line first = cli.awaitLine(false, "first"::equals, RUN_LIMIT);
      String runId = latestRunId();
      runIds.add(runId);
      assertThat(status(runId)).as("the run when its first line arrived").isEqualTo("running");
      CliProcess.Line denied =
          cli.awaitLine(true, l -> l.startsWith("denied: "), Duration.ofSeconds(30));
      assertThat(denied.text()).isEqualTo("denied: api.denied.test:80 not-allowed");
      assertThat(status(runId)).as("the run when its refusal was printed").isEqualTo("running");
      int exit = cli.await(RUN_LIMIT);
      CliProcess.Line last = cli.awaitLine(false, "last"::equals, Duration.ofSeconds(1));
      assertThat(exit).as(cli.toString()).isEqualTo(7);
      assertThat(cli.outText()).isEqualTo("first\nHTTP 403\nlast");
      assertThat(first.at()).isBefore(denied.at());
      assertThat(denied.at()).isBefore(last.at());
      System.out.printf(
          "CliRunIT: first line %s, refusal +%d ms, last line +%d ms%n",
          first.at(),
          Duration.between(first.at(), denied.at()).toMillis(),
          Duration.between(first.at(), last.at()).toMillis());
    }
  }

  /**
   * A workload that prints escape sequences at the operator following it: a clipboard write (OSC
   * 52), a cleared screen, a window title, a C1 escape and a right-to-left override, on stdout and
   * stderr. On a terminal (util-linux {@code script} gives the CLI a pseudo-terminal) each arrives
   * named, none raw; through a pipe the bytes are exactly the workload's.
   */
  @Test
  void escapeSequencesAWorkloadPrintsReachATerminalNamedAndAPipeRaw() throws Exception {
    String workload =
        "printf 'ok\\033]52;c;ZXZpbCB8IHNo\\007\\n\\033[2Jclear\\n\\302\\233"
            + "31mc1\\n\\342\\200\\256desrever\\n'; printf '\\033]0;pwned\\007err\\n' >&2";
    String raw = "ok\u001b]52;c;ZXZpbCB8IHNo\u0007\n\u001b[2Jclear\n\u009b31mc1\n\u202edesrever\n";

    CliProcess piped =
        CliProcess.run(env, "", RUN_LIMIT, "run", "--agent", "cli", "--", "sh", "-c", workload);
    assertThat(piped.await(Duration.ofSeconds(1))).as(piped.toString()).isZero();
    runIds.add(newestEndedRunId());
    assertThat(piped.outText() + "\n").as("a pipe gets the workload's bytes").isEqualTo(raw);
    assertThat(piped.errText()).contains("\u001b]0;pwned\u0007err");

    // The same run on a terminal: script(1) runs the CLI on a pseudo-terminal and copies what the
    // terminal was sent to its own stdout.
    Path command = dir.resolve("on-a-terminal.sh");
    Files.writeString(
        command,
        "#!/bin/sh\nexec "
            + String.join(
                " ",
                ProcessHandle.current().info().command().orElse("java"),
                "--enable-native-access=ALL-UNNAMED",
                "-jar",
                CliProcess.JAR.toAbsolutePath().toString(),
                "run",
                "--agent",
                "cli",
                "--",
                "sh",
                "-c",
                "\"" + workload.replace("\\", "\\\\") + "\"")
            + "\n");
    Files.setPosixFilePermissions(
        command, java.nio.file.attribute.PosixFilePermissions.fromString("rwx------"));
    ProcessBuilder onTerminal =
        new ProcessBuilder("script", "-q", "-e", "-c", command.toString(), "/dev/null")
            .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
            .redirectErrorStream(true);
    onTerminal.environment().remove("AGENT_SANDBOX_TOKEN");
    onTerminal.environment().remove("AGENT_SANDBOX_URL");
    onTerminal.environment().putAll(env);
    Process terminal = onTerminal.start();
    byte[] shown = terminal.getInputStream().readAllBytes();
    assertThat(terminal.waitFor(RUN_LIMIT.toSeconds(), TimeUnit.SECONDS)).isTrue();
    runIds.add(newestEndedRunId());
    String seen = new String(shown, StandardCharsets.UTF_8);
    assertThat(terminal.exitValue()).as(seen).isZero();
    assertThat(seen)
        .as("what the terminal was sent")
        .contains(
            "ok<U+001B>]52;c;ZXZpbCB8IHNo<U+0007>",
            "<U+001B>[2Jclear",
            "<U+009B>31mc1",
            "<U+202E>desrever",
            "<U+001B>]0;pwned<U+0007>err")
        .doesNotContain("\u001b", "\u009b", "\u202e", "\u0007");
  }

  @Test
  void sigintKillsTheRunSaysSoAndTheAuditShowsTheKill() throws Exception {
    try (CliProcess cli =
        CliProcess.start(
            env, "run", "--agent", "cli", "--", "sh", "-c", "echo started; sleep 100")) {
      cli.awaitLine(false, "started"::equals, RUN_LIMIT);
      Process kill = new ProcessBuilder("kill", "-INT", Long.toString(cli.pid())).start();
      assertThat(kill.waitFor(10, TimeUnit.SECONDS) && kill.exitValue() == 0).isTrue();
      // Generous: it only stops a hang. 10 s ran out once on a CI run at load average 12.
      CliProcess.Line killing =
          cli.awaitLine(true, l -> l.contains("Ctrl-C: killing run"), Duration.ofSeconds(60));
      Matcher id = KILLING.matcher(killing.text());
      assertThat(id.find()).as(killing.text()).isTrue();
      runIds.add(id.group(1));
      int exit = cli.await(Duration.ofSeconds(60));
      assertThat(exit).as(cli.toString()).isEqualTo(ExitCodes.KILLED);
      assertThat(cli.errText()).contains("run " + id.group(1) + " was killed (exit code 123)");
      awaitTornDown(id.group(1));
      JsonNode audit = api("/api/admin/platform/audit?run=" + id.group(1));
      List<String> types = new ArrayList<>();
      JsonNode kill1 = null;
      for (JsonNode row : audit.path("rows")) {
        types.add(row.path("type").asText());
        if (row.path("type").asText().equals("agent_sandbox.kill")) {
          kill1 = row;
        }
      }
      assertThat(types)
          .containsSubsequence(
              "agent_sandbox.launch", "agent_sandbox.kill", "agent_sandbox.teardown");
      assertThat(kill1.path("actor").asText()).isEqualTo("admin");
      assertThat(status(id.group(1))).isEqualTo("killed");
    }
  }

  @Test
  void runsListParsesAsJsonAndYamlAndItsTableLinesUp() throws Exception {
    CliProcess detached =
        CliProcess.run(
            env,
            "",
            Duration.ofSeconds(60),
            "run",
            "--detach",
            "--agent",
            "cli",
            "--",
            "sh",
            "-c",
            "echo detached");
    assertThat(detached.await(Duration.ofSeconds(1))).as(detached.toString()).isZero();
    String runId = detached.outText().strip();
    assertThat(runId).matches("[a-z0-9]{20}");
    runIds.add(runId);
    CliProcess logs = CliProcess.run(env, "", RUN_LIMIT, "runs", "logs", "-f", runId);
    assertThat(logs.outText()).isEqualTo("detached");

    CliProcess json =
        CliProcess.run(
            env,
            "",
            Duration.ofSeconds(60),
            "runs",
            "list",
            "--agent",
            "cli",
            "--status",
            "exited",
            "--since",
            "1h",
            "-o",
            "json");
    JsonNode list = JSON.readTree(json.outText());
    List<String> listed = new ArrayList<>();
    list.path("runs").forEach(r -> listed.add(r.path("run_id").asText()));
    assertThat(listed).contains(runId);
    list.path("runs")
        .forEach(
            r -> {
              assertThat(r.path("agent").asText()).isEqualTo("cli");
              assertThat(r.path("status").asText()).isEqualTo("exited");
            });

    CliProcess yaml =
        CliProcess.run(env, "", Duration.ofSeconds(60), "runs", "get", runId, "-o", "yaml");
    JsonNode got = new YAMLMapper().readTree(yaml.outText());
    assertThat(got.path("run_id").asText()).isEqualTo(runId);
    assertThat(got.path("exit_status").asInt()).isZero();

    CliProcess table = CliProcess.run(env, "", Duration.ofSeconds(60), "runs", "list");
    List<String> lines = table.out().stream().map(CliProcess.Line::text).toList();
    assertThat(lines.getFirst()).startsWith("RUN ID").contains("STATUS");
    assertLinedUp(lines);
    assertThat(lines).anySatisfy(l -> assertThat(l).startsWith(runId + "  cli "));

    CliProcess bare =
        CliProcess.run(env, "", Duration.ofSeconds(60), "runs", "list", "--no-headers");
    assertThat(bare.out().getFirst().text()).doesNotContain("RUN ID");
    assertThat(bare.out()).hasSize(lines.size() - 1);
  }

  /**
   * One run through everything that comes after it: stderr apart from stdout, the labels the list
   * filters by, the file it left downloaded at the end ({@code --artifacts}) and again with {@code
   * artifacts get}, each with the listed hash, and its timeline as JSON and as a table.
   */
  @Test
  void aRunsStderrArtifactsLabelsAndTimelineThroughTheCommandLine() throws Exception {
    Path atEnd = dir.resolve("artifacts-at-end");
    String owner = "cli-it-" + ProcessHandle.current().pid();
    CliProcess run =
        CliProcess.run(
            env,
            "",
            RUN_LIMIT,
            "run",
            "--agent",
            "cli",
            "--label",
            "owner=" + owner,
            "--label",
            "task-ref=T-15",
            "--artifacts",
            atEnd.toString(),
            "--",
            "sh",
            "-c",
            "echo to-stdout; echo to-stderr >&2; printf '{\"passed\": 12}' >"
                + " \"$AGENT_SANDBOX_OUT/result.json\"");
    assertThat(run.await(Duration.ofSeconds(1))).as(run.toString()).isZero();
    assertThat(run.outText()).isEqualTo("to-stdout");
    assertThat(run.errText()).contains("to-stderr");
    byte[] expected = "{\"passed\": 12}".getBytes(StandardCharsets.UTF_8);
    Path savedAtEnd = atEnd.toRealPath().resolve("result.json");
    assertThat(run.errText()).contains(savedAtEnd.toString());
    assertThat(Files.readAllBytes(savedAtEnd)).isEqualTo(expected);

    CliProcess labelled =
        CliProcess.run(
            env,
            "",
            Duration.ofSeconds(60),
            "runs",
            "list",
            "--label",
            "owner=" + owner,
            "-o",
            "json");
    JsonNode listed = JSON.readTree(labelled.outText()).path("runs");
    assertThat(listed).as(labelled.toString()).hasSize(1);
    String runId = listed.get(0).path("run_id").asText();
    runIds.add(runId);
    CliProcess both =
        CliProcess.run(
            env,
            "",
            Duration.ofSeconds(60),
            "runs",
            "list",
            "-l",
            "owner=" + owner,
            "-l",
            "task-ref=T-15",
            "--no-headers");
    assertThat(both.outText()).startsWith(runId + "  cli ");
    assertThat(both.out()).hasSize(1);
    CliProcess other =
        CliProcess.run(
            env,
            "",
            Duration.ofSeconds(60),
            "runs",
            "list",
            "--label",
            "owner=nobody",
            "-o",
            "json");
    assertThat(JSON.readTree(other.outText()).path("runs")).isEmpty();

    CliProcess list =
        CliProcess.run(env, "", Duration.ofSeconds(60), "artifacts", "list", runId, "-o", "json");
    JsonNode artifact = JSON.readTree(list.outText()).path("artifacts").get(0);
    assertThat(artifact.path("path").asText()).isEqualTo("result.json");
    assertThat(artifact.path("sha256").asText()).isEqualTo(ArtifactDownloadTest.sha256(expected));
    Path later = dir.resolve("artifacts-later");
    CliProcess get =
        CliProcess.run(
            env, "", Duration.ofSeconds(60), "artifacts", "get", runId, "-o", later.toString());
    assertThat(get.await(Duration.ofSeconds(1))).as(get.toString()).isZero();
    Path saved = later.toRealPath().resolve("result.json");
    assertThat(get.outText()).isEqualTo(saved.toString());
    assertThat(ArtifactDownloadTest.sha256(Files.readAllBytes(saved)))
        .isEqualTo(artifact.path("sha256").asText());

    awaitTornDown(runId);
    CliProcess json =
        CliProcess.run(env, "", Duration.ofSeconds(60), "runs", "timeline", runId, "-o", "json");
    assertThat(json.await(Duration.ofSeconds(1))).as(json.toString()).isZero();
    JsonNode timeline = JSON.readTree(json.outText());
    assertThat(timeline.path("labels").path("owner").asText()).isEqualTo(owner);
    assertThat(timeline.path("chain").path("verified").asBoolean()).isTrue();
    List<String> types = new ArrayList<>();
    timeline.path("events").forEach(e -> types.add(e.path("type").asText()));
    assertThat(types)
        .containsSubsequence(
            "agent_sandbox.launch", "agent_sandbox.artifacts", "agent_sandbox.teardown");

    CliProcess table = CliProcess.run(env, "", Duration.ofSeconds(60), "audit", "run", runId);
    assertThat(table.await(Duration.ofSeconds(1))).as(table.toString()).isZero();
    List<String> lines = table.out().stream().map(CliProcess.Line::text).toList();
    assertThat(lines.getFirst()).isEqualTo("Run        " + runId + " (agent cli)");
    assertThat(lines).contains("Egress     0 denied, 0 allowed (first connection per host)");
    List<String> rows =
        lines.stream().dropWhile(l -> !l.startsWith("TIME")).takeWhile(l -> !l.isEmpty()).toList();
    assertThat(rows).hasSize(types.size() + 1);
    assertLinedUp(rows);
    assertThat(rows.get(1)).contains("launch").contains("by admin");
    assertThat(rows).anySatisfy(r -> assertThat(r).contains("artifacts").contains("result.json"));
    JsonNode last = timeline.path("events").get(types.size() - 1);
    assertThat(lines.getLast())
        .startsWith("Audit chain verified up to row " + last.path("id").asText() + " (hash ");
    CliProcess same =
        CliProcess.run(env, "", Duration.ofSeconds(60), "runs", "timeline", runId, "--no-headers");
    assertThat(same.out().stream().map(l -> l.text().replaceAll(" {2,}", "  ")).toList())
        .as("the same rows without the header (columns narrower without it)")
        .isEqualTo(
            rows.subList(1, rows.size()).stream().map(l -> l.replaceAll(" {2,}", "  ")).toList());
  }

  @Test
  void configEditShowsTheLooseningAndRequiresAReason() throws Exception {
    Path editor = dir.resolve("add-agent.sh");
    Files.writeString(
        editor,
        "#!/bin/sh\n"
            + "sed -i 's/^agents:$/agents:\\n  edited:\\n    allow: [api.vendor.test]/' \"$1\"\n");
    editor.toFile().setExecutable(true);
    Map<String, String> editing = with("EDITOR", editor.toString());
    long before = api(AdminApi.BASE).path("version").asLong();

    CliProcess noReason = CliProcess.run(editing, "\n", Duration.ofSeconds(60), "config", "edit");
    assertThat(noReason.await(Duration.ofSeconds(1))).as(noReason.toString()).isEqualTo(1);
    assertThat(noReason.errText())
        .contains("+  edited:")
        .contains("LOOSENS")
        .contains("agent_added")
        .contains("agents.edited")
        .contains("Reason (required)")
        .contains("needs a reason; nothing saved");
    assertThat(api(AdminApi.BASE).path("version").asLong()).isEqualTo(before);

    CliProcess saved =
        CliProcess.run(editing, "CHG-7\ny\n", Duration.ofSeconds(60), "config", "edit");
    assertThat(saved.await(Duration.ofSeconds(1))).as(saved.toString()).isZero();
    assertThat(saved.outText()).contains("as version " + (before + 1));
    JsonNode rows = api("/api/admin/platform/audit?type=agent_sandbox.config.update").path("rows");
    JsonNode last = rows.get(rows.size() - 1);
    assertThat(last.path("data").path("reason").asText()).isEqualTo("CHG-7");
    assertThat(last.path("data").path("loosenings").toString()).contains("agent_added");
  }

  @Test
  void configEditReopensTheEditorOnTheVersionSavedMeanwhile() throws Exception {
    Path concurrent = dir.resolve("concurrent.json");
    Path count = dir.resolve("editor-calls");
    Path editor = dir.resolve("race.sh");
    // The colleague's curl goes through a relay that checks its exchange against openapi.json.
    CheckingRelay relay = CheckingRelay.to(base);
    // The first time, someone else saves a change while "the editor is open"; both times the
    // edit narrows the cli agent's time to live.
    Files.writeString(
        editor,
        "#!/bin/sh\n"
            + "echo x >> '"
            + count
            + "'\n"
            + "if [ \"$(wc -l < '"
            + count
            + "')\" -eq 1 ]; then\n"
            + "  v=$(sed -n 's/^version: //p' \"$1\")\n"
            + "  sed \"s/VERSION/$v/\" '"
            + concurrent
            + "' > '"
            + concurrent
            + ".sent'\n"
            // The header from standard input: a token on curl's command line shows in ps.
            + "  printf 'Authorization: Bearer %s\\n' \"$(cat '"
            + data.resolve("admin-token")
            + "')\" | curl -sS -o /dev/null -X PUT -H @- -H 'Content-Type: application/json'"
            + " --data @'"
            + concurrent
            + ".sent' '"
            + relay.baseUrl()
            + AdminApi.BASE
            + "'\n"
            + "fi\n"
            + "sed -i 's/ttl_seconds: 120/ttl_seconds: 100/' \"$1\"\n");
    editor.toFile().setExecutable(true);
    JsonNode current = api(AdminApi.BASE);
    com.fasterxml.jackson.databind.node.ObjectNode other = GovernedDocument.editable(current);
    ((com.fasterxml.jackson.databind.node.ObjectNode) other.path("agents").path("cli"))
        .putArray("allow")
        .add("other.vendor.test");
    other.put("version", "VERSION");
    other.put("reason", "a colleague's change");
    Files.writeString(concurrent, JSON.writeValueAsString(other).replace("\"VERSION\"", "VERSION"));

    CliProcess edit;
    try (relay) {
      edit =
          CliProcess.run(
              with("EDITOR", editor.toString()),
              "\ny\n\ny\n",
              Duration.ofSeconds(60),
              "config",
              "edit");
      assertThat(edit.await(Duration.ofSeconds(1))).as(edit.toString()).isZero();
    }
    assertThat(relay.violations()).as("the colleague's PUT against openapi.json").isEmpty();
    assertThat(relay.relayed()).containsExactly("PUT " + AdminApi.BASE + " → 200");
    assertThat(Files.readAllLines(count)).hasSize(2);
    assertThat(edit.errText())
        .contains("someone saved version " + (current.path("version").asLong() + 1));
    JsonNode after = api(AdminApi.BASE);
    assertThat(after.path("version").asLong()).isEqualTo(current.path("version").asLong() + 2);
    assertThat(after.path("agents").path("cli").path("ttl_seconds").asInt()).isEqualTo(100);
    assertThat(after.path("agents").path("cli").path("allow").toString())
        .as("the colleague's change survives")
        .contains("other.vendor.test");
  }

  /**
   * A person at a terminal: the CLI in a tmux pane (a real terminal, so the progress line shows),
   * {@code run} then {@code runs list}, captured as the pane shows them into {@code
   * target/cli-session.txt}, the session docs/cli.md shows.
   */
  @Test
  void aTerminalSessionShowsRunAndRunsListAsAPersonSeesThem() throws Exception {
    Path bin = Files.createDirectories(dir.resolve("bin"));
    Path wrapper = bin.resolve("agent-sandbox");
    Files.writeString(
        wrapper,
        "#!/bin/sh\nexec '"
            + ProcessHandle.current().info().command().orElse("java")
            + "' --enable-native-access=ALL-UNNAMED -jar '"
            + CliProcess.JAR.toAbsolutePath()
            + "' \"$@\"\n");
    wrapper.toFile().setExecutable(true);
    Path socket = dir.resolve("tmux.sock");
    // The shell gets its environment through env(1): a bare prompt, the wrapper on PATH, this
    // test's contexts, and no NO_COLOR (a person's terminal, colours and all).
    tmux(
        socket,
        "new-session",
        "-d",
        "-s",
        "cli",
        "-x",
        "100",
        "-y",
        "30",
        "env -u NO_COLOR PATH="
            + bin
            + ":/usr/bin:/bin AGENT_SANDBOX_CONFIG="
            + env.get("AGENT_SANDBOX_CONFIG")
            + " 'PS1=$ ' bash --norc --noprofile");
    try {
      awaitPrompt(socket, "$");
      type(
          socket,
          "agent-sandbox run --agent cli -- sh -c 'echo hello; curl -sS https://api.denied.test/"
              + " || echo refused; echo done; exit 3'");
      awaitPrompt(socket, "done");
      type(socket, "echo $?");
      awaitPrompt(socket, "\n3\n");
      type(socket, "agent-sandbox runs list --limit 3");
      String screen = awaitPrompt(socket, "RUN ID");
      Files.writeString(Path.of("target", "cli-session.txt"), screen);
      assertThat(screen)
          .contains("hello")
          .contains("denied: api.denied.test:443 not-allowed")
          .contains("refused")
          .containsPattern("run [a-z0-9]{20} running on docker")
          .contains("$ echo $?\n3\n");
      List<String> table =
          screen
              .lines()
              .dropWhile(l -> !l.startsWith("RUN ID"))
              .takeWhile(l -> !l.startsWith("$"))
              .toList();
      assertThat(table).hasSizeGreaterThan(1);
      assertLinedUp(table);
      Matcher id = Pattern.compile("run ([a-z0-9]{20}) running").matcher(screen);
      assertThat(id.find()).isTrue();
      runIds.add(id.group(1));

      // The same run's audit trail, in a pane wide enough for its summaries.
      tmux(
          socket,
          "new-session",
          "-d",
          "-s",
          "trail",
          "-x",
          "160",
          "-y",
          "30",
          "env -u NO_COLOR PATH="
              + bin
              + ":/usr/bin:/bin AGENT_SANDBOX_CONFIG="
              + env.get("AGENT_SANDBOX_CONFIG")
              + " 'PS1=$ ' bash --norc --noprofile");
      awaitPrompt(socket, "trail", "$");
      awaitTornDown(id.group(1));
      type(socket, "trail", "agent-sandbox audit run " + id.group(1));
      String trail = awaitPrompt(socket, "trail", "Audit chain verified up to row");
      Files.writeString(Path.of("target", "cli-audit-run.txt"), trail);
      assertThat(trail)
          .contains("Run        " + id.group(1) + " (agent cli)")
          .contains("Egress     1 denied, 0 allowed")
          .containsPattern("egress\\.deny +deny api\\.denied\\.test:443 not-allowed")
          .containsPattern("teardown +exited with status 3, everything removed");
    } finally {
      tmux(socket, "kill-server");
    }
  }

  private static Map<String, String> with(String name, String value) {
    Map<String, String> more = new java.util.HashMap<>(env);
    more.put(name, value);
    return more;
  }

  private static String tmux(Path socket, String... args) throws Exception {
    List<String> command = new ArrayList<>(List.of("tmux", "-S", socket.toString()));
    command.addAll(List.of(args));
    Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
    String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!process.waitFor(30, TimeUnit.SECONDS) || process.exitValue() != 0) {
      fail(
          "tmux "
              + String.join(" ", args)
              + ": "
              + output
              + " (is tmux installed? scripts/install-host.sh)");
    }
    return output;
  }

  private static void type(Path socket, String line) throws Exception {
    type(socket, "cli", line);
  }

  private static void type(Path socket, String session, String line) throws Exception {
    tmux(socket, "send-keys", "-t", session, "-l", line);
    tmux(socket, "send-keys", "-t", session, "Enter");
  }

  private static String awaitPrompt(Path socket, String wanted) throws Exception {
    return awaitPrompt(socket, "cli", wanted);
  }

  /** The pane once it shows {@code wanted} and the prompt is back; bounded. */
  private static String awaitPrompt(Path socket, String session, String wanted) throws Exception {
    AtomicReference<String> screen = new AtomicReference<>("");
    try {
      Awaitility.await()
          .atMost(RUN_LIMIT)
          .pollDelay(Duration.ZERO)
          .pollInterval(Duration.ofMillis(300))
          .until(
              () -> {
                String shown = tmux(socket, "capture-pane", "-p", "-t", session).stripTrailing();
                screen.set(shown);
                return shown.contains(wanted) && (shown.equals("$") || shown.endsWith("\n$"));
              });
    } catch (ConditionTimeoutException e) {
      return fail(
          "the pane did not show "
              + wanted
              + " and a prompt within "
              + RUN_LIMIT
              + ":\n"
              + screen.get());
    }
    return screen.get() + "\n";
  }

  /** Every column starts at the same offset on every line, as the header places it. */
  static void assertLinedUp(List<String> lines) {
    String header = lines.getFirst();
    List<Integer> starts = new ArrayList<>();
    Matcher column = Pattern.compile("(?<=^|  )\\S").matcher(header);
    while (column.find()) {
      starts.add(column.start());
    }
    assertThat(starts).hasSizeGreaterThan(3);
    for (String line : lines.subList(1, lines.size())) {
      for (int start : starts) {
        assertThat(line.length()).as(line).isGreaterThan(start);
        assertThat(line.charAt(start)).as("column at %d in [%s]", start, line).isNotEqualTo(' ');
        if (start > 0) {
          assertThat(line.charAt(start - 1))
              .as("gap before %d in [%s]", start, line)
              .isEqualTo(' ');
        }
      }
    }
  }

  /** The newest run not yet in {@link #runIds}, which has ended (the CLI that ran it returned). */
  private static String newestEndedRunId() throws Exception {
    for (JsonNode run : api("/api/admin/platform/agent-sandbox/runs?limit=5").path("runs")) {
      if (!runIds.contains(run.path("run_id").asText())) {
        return run.path("run_id").asText();
      }
    }
    return fail("no new run");
  }

  private static String latestRunId() throws Exception {
    return Awaitility.await("a new running run")
        .atMost(Duration.ofSeconds(30))
        .pollDelay(Duration.ZERO)
        .pollInterval(Duration.ofMillis(200))
        .until(
            () -> {
              for (JsonNode run :
                  api("/api/admin/platform/agent-sandbox/runs?limit=5").path("runs")) {
                if (!runIds.contains(run.path("run_id").asText())
                    && run.path("status").asText().equals("running")) {
                  return Optional.of(run.path("run_id").asText());
                }
              }
              return Optional.<String>empty();
            },
            Optional::isPresent)
        .orElseThrow();
  }

  private static String status(String runId) throws Exception {
    return api("/api/admin/platform/agent-sandbox/runs/" + runId).path("status").asText();
  }

  /**
   * Waits (bounded) for the run's teardown row: the sandbox is removed after the run's result is
   * answered, so the row may follow the CLI's exit.
   */
  static void awaitTornDown(String runId) throws Exception {
    Instant until = Instant.now().plus(Duration.ofSeconds(60));
    while (!api("/api/admin/platform/audit?run=" + runId + "&limit=1000")
        .toString()
        .contains("agent_sandbox.teardown")) {
      assertThat(Instant.now()).as("the teardown row of run " + runId).isBefore(until);
      Thread.sleep(250);
    }
  }

  static JsonNode api(String path) {
    ApiClient.Answer response = client.get(path, token);
    assertThat(response.status()).as(path + ": " + response.body()).isEqualTo(200);
    return response.json();
  }
}
