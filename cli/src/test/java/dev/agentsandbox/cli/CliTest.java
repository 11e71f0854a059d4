package dev.agentsandbox.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.runs.RunSettings;
import dev.agentsandbox.testing.api.ApiClient;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class CliTest {
  @TempDir Path dir;

  /** Output and exit code of one run of the command. */
  record Run(int exit, String out, String err) {}

  Run run(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine commandLine = Main.commandLine();
    commandLine.setOut(new PrintWriter(out));
    commandLine.setErr(new PrintWriter(err));
    int exit = commandLine.execute(args);
    return new Run(exit, out.toString(), err.toString());
  }

  String db() {
    return "jdbc:sqlite:" + dir.resolve("store.db");
  }

  @Test
  void everyCommandHasHelp() {
    List<CommandLine> all = new ArrayList<>();
    collect(Main.commandLine(), all);
    assertThat(all)
        .extracting(CommandLine::getCommandName)
        .contains(
            "serve", "token", "create", "list", "revoke", "audit", "tail", "query", "verify",
            "export", "config", "proxy");
    for (CommandLine command : all) {
      if (command.getCommandName().equals("help")) {
        continue;
      }
      List<String> path = new ArrayList<>();
      for (CommandLine c = command; c.getParent() != null; c = c.getParent()) {
        path.addFirst(c.getCommandName());
      }
      path.add("--help");
      Run help = run(path.toArray(String[]::new));
      assertThat(help.exit()).as("%s", path).isZero();
      assertThat(help.out()).as("%s", path).startsWith("Usage: agent-sandbox");
    }
  }

  private static void collect(CommandLine command, List<CommandLine> into) {
    into.add(command);
    command.getSubcommands().values().forEach(sub -> collect(sub, into));
  }

  @Test
  void tokenCreatePrintsOnlyTheTokenAndListNeverShowsIt() {
    Run created =
        run(
            "token",
            "create",
            "--name",
            "ci",
            "--scopes",
            "audit.read,agent_sandbox.read",
            "--expires",
            "30d",
            "--db",
            db());
    assertThat(created.exit()).isZero();
    String secret = created.out().strip();
    assertThat(created.out().lines()).hasSize(1);
    assertThat(secret).startsWith("asb_");
    Run list = run("token", "list", "--db", db());
    assertThat(list.out())
        .contains("ci")
        .contains("active")
        .contains("agent_sandbox.read,audit.read");
    assertThat(list.out()).doesNotContain(secret);
    assertThat(run("token", "revoke", "ci", "--db", db()).exit()).isZero();
    assertThat(run("token", "list", "--db", db()).out()).contains("revoked");
    assertThat(run("token", "revoke", "ci", "--db", db()).exit()).isEqualTo(Main.FAILED);

    // Both are on the audit log, naming the token, its scopes and expiry and who ran the command;
    // never the token.
    try (dev.agentsandbox.store.Store store = dev.agentsandbox.store.Store.open(db())) {
      List<dev.agentsandbox.store.AuditRow> rows =
          store
              .audit()
              .query(
                  new dev.agentsandbox.store.AuditQuery(
                      "agent_sandbox.token", null, null, null, null, 10));
      assertThat(rows)
          .extracting(dev.agentsandbox.store.AuditRow::type)
          .containsExactly("agent_sandbox.token.create", "agent_sandbox.token.revoke");
      assertThat(rows)
          .allSatisfy(
              r -> {
                assertThat(r.actor()).isEqualTo("cli:" + System.getProperty("user.name"));
                assertThat(r.data().path("name").asText()).isEqualTo("ci");
                assertThat(r.data().path("scopes").toString())
                    .isEqualTo("[\"agent_sandbox.read\",\"audit.read\"]");
                assertThat(r.data().path("expires_at").asText()).startsWith("20");
              });
      assertThat(rows.toString()).doesNotContain(secret.substring(4));
    }
  }

  @Test
  void aTokenLimitedToAgentsIsListedWithThemAndMayHoldOnlyAgentScopes() {
    Run created =
        run(
            "token",
            "create",
            "--name",
            "team-a",
            "--scopes",
            "agent_sandbox.read,agent_sandbox.run",
            "--agents",
            "planner,helper",
            "--db",
            db());
    assertThat(created.exit()).as(created.err()).isZero();
    assertThat(created.out().strip()).startsWith("asb_");
    Run list = run("token", "list", "--db", db());
    assertThat(list.out().lines())
        .filteredOn(line -> line.startsWith("team-a "))
        .singleElement()
        .asString()
        .contains("helper,planner")
        .contains("agent_sandbox.read,agent_sandbox.run");
    assertThat(list.out()).contains("AGENTS");

    // Instance-wide scopes would show or change every agent's settings: refused with the reason.
    Run wide =
        run(
            "token",
            "create",
            "--name",
            "team-b",
            "--scopes",
            "agent_sandbox.read,agent_sandbox.configure,audit.read",
            "--agents",
            "helper",
            "--db",
            db());
    assertThat(wide.exit()).isEqualTo(Main.USAGE);
    assertThat(wide.err())
        .contains("may hold only agent_sandbox.read and agent_sandbox.run")
        .contains("agent_sandbox.configure, audit.read");
    Run badName =
        run(
            "token",
            "create",
            "--name",
            "team-c",
            "--scopes",
            "agent_sandbox.run",
            "--agents",
            "helper,Planner,",
            "--db",
            db());
    assertThat(badName.exit()).isEqualTo(Main.USAGE);
    assertThat(badName.err()).contains("'Planner' is not an agent name");
    assertThat(run("token", "list", "--db", db()).out()).doesNotContain("team-b", "team-c");

    try (dev.agentsandbox.store.Store store = dev.agentsandbox.store.Store.open(db())) {
      assertThat(
              store
                  .audit()
                  .query(
                      new dev.agentsandbox.store.AuditQuery(
                          "agent_sandbox.token.create", null, null, null, null, 10)))
          .singleElement()
          .satisfies(
              r ->
                  assertThat(r.data().path("agents").toString())
                      .isEqualTo("[\"helper\",\"planner\"]"));
    }
  }

  @Test
  void wrongCommandLinesExitTwo() {
    assertThat(run("token", "create", "--name", "x", "--scopes", "root", "--db", db()).exit())
        .isEqualTo(Main.USAGE);
    assertThat(
            run(
                    "token",
                    "create",
                    "--name",
                    "x",
                    "--scopes",
                    "audit.read",
                    "--expires",
                    "soon",
                    "--db",
                    db())
                .exit())
        .isEqualTo(Main.USAGE);
    assertThat(run("no-such-command").exit()).isEqualTo(Main.USAGE);
  }

  @Test
  void serveRefusesRunContractOptionsItCannotHonour() throws Exception {
    String[][] bad = {
      {"--credential-command", "aws"},
      {"--credential-command", "AWS=/bin/true"},
      {"--credential-command", "aws=relative/mint"},
      {"--jwt-keys", dir.resolve("missing.json").toString(), "--jwt-active-kid", "k1"},
      {"--jwt-keys", dir.resolve("missing.json").toString()},
      {"--credential-command-timeout", "0"},
      {"--artifacts-retention", "0d"},
      {"--artifacts-retention", "30"},
      {"--artifacts-retention", "10s"},
      {"--artifacts-retention", "-1d"},
      {"--docker-subnet-pool", "10.213.0.1/16"},
      {"--docker-subnet-pool", "8.8.0.0/16"},
      {"--docker-subnet-pool", "fd00::/64"},
      {"--docker-subnet-pool", "10.213.0.0/28"},
      {"--docker-subnet-pool", "10.213.0.0"},
      {"--docker-subnet-pool", "banana/16"},
      {"--docker-proxy-pool", "-1"},
      {"--docker-proxy-pool", "1000"},
      {"--docker-proxy-pool", "many"},
      {"--max-runs", "0"},
      {"--max-runs", "1025"},
    };
    for (String[] options : bad) {
      ServeCommand serve = new ServeCommand();
      List<String> args =
          new java.util.ArrayList<>(
              List.of(
                  "--listen",
                  "127.0.0.1:0",
                  "--data-dir",
                  dir.resolve("data").toString(),
                  "--db",
                  db(),
                  "--microvm-accel",
                  "off"));
      args.addAll(List.of(options));
      new CommandLine(serve).parseArgs(args.toArray(String[]::new));
      org.assertj.core.api.Assertions.assertThatThrownBy(
              () -> serve.start(new PrintWriter(new StringWriter())))
          .as(String.join(" ", options))
          .isInstanceOf(RuntimeException.class)
          .hasMessageFindingMatch(
              "--credential-command|--jwt|JWT signing keys|absolute|--artifacts-retention"
                  + "|--docker-subnet-pool|--docker-proxy-pool|--max-runs");
    }
  }

  @Test
  void serveTakesDockerSubnetsFromThePoolItIsGivenAndFromAFreeRangeOtherwise() {
    ServeCommand serve = new ServeCommand();
    new CommandLine(serve).parseArgs("--docker-subnet-pool", "10.213.0.0/16");
    assertThat(Backends.dockerConfig(serve).build().subnetPool().orElseThrow().range().toString())
        .isEqualTo("10.213.0.0/16");
    ServeCommand plain = new ServeCommand();
    new CommandLine(plain).parseArgs();
    assertThat(Backends.dockerConfig(plain).build().subnetPool())
        .as("automatic: the backend chooses a free range, never Docker's default pools")
        .isEmpty();
  }

  @Test
  void serveKeepsSixteenRunsLiveUnlessToldAndSizesTheSubnetsForWhatItIsTold() {
    ServeCommand plain = new ServeCommand();
    new CommandLine(plain).parseArgs();
    assertThat(Backends.settings(plain, "i").maxConcurrentRuns()).isEqualTo(16);
    ServeCommand dense = new ServeCommand();
    new CommandLine(dense).parseArgs("--max-runs", "120");
    RunSettings settings = Backends.settings(dense, "i");
    assertThat(settings.maxConcurrentRuns()).isEqualTo(120);
    assertThat(settings.tailBytes())
        .as("only the limit changes")
        .isEqualTo(RunSettings.defaults("i").tailBytes());
  }

  @Test
  void serveSizesItsProxyPoolFromTheHostUnlessTold() {
    ServeCommand plain = new ServeCommand();
    new CommandLine(plain).parseArgs();
    assertThat(Backends.dockerConfig(plain).build().proxyPoolSize())
        .as("automatic by default")
        .isEmpty();
    ServeCommand pooled = new ServeCommand();
    new CommandLine(pooled).parseArgs("--docker-proxy-pool", "3");
    assertThat(Backends.dockerConfig(pooled).build().proxyPoolSize()).hasValue(3);
    ServeCommand off = new ServeCommand();
    new CommandLine(off).parseArgs("--docker-proxy-pool", "0");
    assertThat(Backends.dockerConfig(off).build().proxyPoolSize()).hasValue(0);
  }

  @Test
  void serveKeepsOutputsUnderTheDataDirectoryByDefault() throws Exception {
    Path data = dir.resolve("data");
    ServeCommand serve = new ServeCommand();
    new CommandLine(serve)
        .parseArgs(
            "--listen",
            "127.0.0.1:0",
            "--data-dir",
            data.toString(),
            "--db",
            db(),
            "--microvm-accel",
            "off");
    RunContractServicesProbe.check(RunContractOptions.config(serve, data), data);
    assertThat(RunContractOptions.config(serve, data).artifacts().orElseThrow().retention())
        .as("kept until an operator says otherwise")
        .isEmpty();
  }

  @Test
  void artifactRetentionReadsMinutesHoursAndDays() {
    assertThat(RunContractOptions.retention("90m")).isEqualTo(java.time.Duration.ofMinutes(90));
    assertThat(RunContractOptions.retention("12h")).isEqualTo(java.time.Duration.ofHours(12));
    assertThat(RunContractOptions.retention("30d")).isEqualTo(java.time.Duration.ofDays(30));
  }

  @Test
  void serveSaysWhenAnExistingDataDirectoryIsOpenToOthers() throws Exception {
    Path data = Files.createDirectories(dir.resolve("shared"));
    Files.setPosixFilePermissions(data, PosixFilePermissions.fromString("rwxr-xr-x"));
    ServeCommand serve = new ServeCommand();
    new CommandLine(serve)
        .parseArgs("--listen", "127.0.0.1:0", "--data-dir", data.toString(), "--db", db());
    StringWriter out = new StringWriter();
    try (ServeCommand.Running running = serve.start(new PrintWriter(out))) {
      assertThat(out.toString())
          .contains("warning: the data directory " + data.toAbsolutePath() + " is rwxr-xr-x")
          .contains("chmod 700 " + data.toAbsolutePath());
    }
    assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(data)))
        .as("an existing folder is the operator's: left as it is")
        .isEqualTo("rwxr-xr-x");
  }

  @Test
  void serveWritesTheFirstAdminTokenToAnOwnerOnlyFileAndNeverPrintsIt() throws Exception {
    Path data = dir.resolve("data");
    ServeCommand serve = new ServeCommand();
    CommandLine commandLine = new CommandLine(serve);
    commandLine.parseArgs("--listen", "127.0.0.1:0", "--data-dir", data.toString(), "--db", db());
    StringWriter out = new StringWriter();
    String secret;
    try (ServeCommand.Running running = serve.start(new PrintWriter(out))) {
      Path file = running.adminTokenFile().orElseThrow();
      assertThat(file).isEqualTo(data.resolve("admin-token").toAbsolutePath());
      assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(data)))
          .as("the data directory serve created")
          .isEqualTo("rwx------");
      assertThat(out.toString()).doesNotContain("warning");
      assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(file)))
          .isEqualTo("rw-------");
      secret = Files.readString(file, StandardCharsets.UTF_8).strip();
      assertThat(out.toString())
          .contains("written to " + file)
          .contains("listening on http://127.0.0.1:");
      assertThat(out.toString()).doesNotContain(secret);

      ApiClient.Answer answer =
          new ApiClient(running.server().baseUrl()).get("/api/admin/platform/audit", secret);
      assertThat(answer.status()).isEqualTo(200);
    }
    // A second start finds an active token and creates none.
    ServeCommand again = new ServeCommand();
    new CommandLine(again)
        .parseArgs("--listen", "127.0.0.1:0", "--data-dir", data.toString(), "--db", db());
    StringWriter againOut = new StringWriter();
    try (ServeCommand.Running running = again.start(new PrintWriter(againOut))) {
      assertThat(running.adminTokenFile()).isEmpty();
      assertThat(againOut.toString())
          .contains("admin token: " + data.resolve("admin-token").toAbsolutePath())
          .doesNotContain(secret);
    }
    assertThat(Files.readString(data.resolve("admin-token"), StandardCharsets.UTF_8).strip())
        .isEqualTo(secret);
  }

  private void appendRows(int count) throws Exception {
    try (var store = dev.agentsandbox.store.Store.open(db())) {
      for (int i = 0; i < count; i++) {
        store
            .audit()
            .append(
                new dev.agentsandbox.store.AuditEvent(
                    "agent_sandbox.test",
                    "cli-test",
                    "helper",
                    "run-" + i,
                    com.fasterxml.jackson.databind.node.JsonNodeFactory.instance
                        .objectNode()
                        .put("n", i)));
      }
    }
  }

  private void sql(String... statements) throws Exception {
    try (Connection c = DriverManager.getConnection(db());
        Statement s = c.createStatement()) {
      for (String statement : statements) {
        s.execute(statement);
      }
    }
  }

  @Test
  void auditVerifyNamesAnEditedRow() throws Exception {
    appendRows(4);
    Run ok = run("audit", "verify", "--db", db());
    assertThat(ok.exit()).isZero();
    assertThat(ok.out()).startsWith("ok: 4 rows checked");
    sql(
        "DROP TRIGGER audit_log_no_update",
        "UPDATE audit_log SET data = '{\"n\":99}' WHERE id = 2");
    Run failed = run("audit", "verify", "--db", db());
    assertThat(failed.exit()).isEqualTo(Main.FAILED);
    assertThat(failed.err()).contains("FAILED").containsPattern("\\b2\\b");
  }

  @Test
  void auditVerifyNamesADeletedRow() throws Exception {
    appendRows(4);
    sql("DROP TRIGGER audit_log_no_delete", "DELETE FROM audit_log WHERE id = 3");
    Run failed = run("audit", "verify", "--db", db());
    assertThat(failed.exit()).isEqualTo(Main.FAILED);
    assertThat(failed.err()).containsPattern("\\b3\\b");
  }

  @Test
  void auditQueryTailAndExportPrintJsonLines() throws Exception {
    appendRows(5);
    Run query =
        run("audit", "query", "--type", "agent_sandbox.test", "--run", "run-3", "--db", db());
    assertThat(query.out().lines()).hasSize(1).allMatch(l -> l.contains("\"run_id\":\"run-3\""));
    Run tail = run("audit", "tail", "-n", "2", "--db", db());
    assertThat(tail.out().lines()).hasSize(2);
    assertThat(tail.out().lines().toList().get(1)).contains("\"run_id\":\"run-4\"");
    Path file = dir.resolve("export.jsonl");
    assertThat(
            run("audit", "export", "--after-id", "1", "-o", file.toString(), "--db", db()).exit())
        .isZero();
    assertThat(Files.readAllLines(file)).hasSize(4);
  }
}
