package dev.agentsandbox.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.agentsandbox.policy.config.Scopes;
import dev.agentsandbox.server.AgentSandboxServer;
import dev.agentsandbox.store.AuditEvent;
import dev.agentsandbox.store.AuditQuery;
import dev.agentsandbox.store.Store;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** {@code config propose} against a real server and store, from refusals the store holds. */
class ConfigProposeTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @TempDir Path dir;

  record Run(int exit, String out, String err) {}

  Run run(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine commandLine = Main.commandLine();
    commandLine.setOut(new PrintWriter(out));
    commandLine.setErr(new PrintWriter(err));
    return new Run(commandLine.execute(args), out.toString(), err.toString());
  }

  private static void deny(Store store, String run, String host, int port, String reason) {
    store
        .audit()
        .append(
            new AuditEvent(
                "agent_sandbox.egress.deny",
                "proxy",
                "planner",
                run,
                JSON.valueToTree(Map.of("host", host, "port", port, "reason", reason))));
  }

  @Test
  void proposesAsADiffWithEvidenceAndAppliesAsAGovernedLoosening() throws Exception {
    try (Store store = Store.open("jdbc:sqlite:" + dir.resolve("store.db"));
        AgentSandboxServer server =
            AgentSandboxServer.start(
                new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), store)) {
      Path admin = dir.resolve("admin.token");
      Files.writeString(
          admin, store.tokens().create("admin", Scopes.ALL, null).secret(), StandardCharsets.UTF_8);
      Path configurer = dir.resolve("configurer.token");
      Files.writeString(
          configurer,
          store.tokens().create("configurer", Set.of(Scopes.CONFIGURE, Scopes.READ), null).secret(),
          StandardCharsets.UTF_8);
      Path doc = dir.resolve("config.json");
      Files.writeString(
          doc,
          "{\"enabled\": true, \"agents\": {\"planner\": {\"allow\": [\"pypi.org\"]}},"
              + " \"reason\": \"setup\"}",
          StandardCharsets.UTF_8);
      String url = server.baseUrl();
      assertThat(
              run("config", "put", doc.toString(), "--url", url, "--token-file", admin.toString())
                  .exit())
          .isZero();
      deny(store, "r1", "files.pythonhosted.org", 443, "not-allowed");
      deny(store, "r2", "files.pythonhosted.org", 443, "not-allowed");
      deny(store, "r2", "169.254.169.254", 80, "ip-literal");

      Run shown =
          run(
              "config",
              "propose",
              "--agent",
              "planner",
              "--url",
              url,
              "--token-file",
              admin.toString());
      assertThat(shown.exit()).as(shown.err()).isZero();
      assertThat(shown.out())
          .contains("Proposal for planner from 3 refusal(s)")
          .contains("+    - files.pythonhosted.org")
          .contains("+ files.pythonhosted.org  2 refusal(s) in 2 run(s)")
          .contains("Stays refused")
          .contains("169.254.169.254:80  ip-literal");

      Run json =
          run(
              "config",
              "propose",
              "--agent",
              "planner",
              "-o",
              "json",
              "--url",
              url,
              "--token-file",
              admin.toString());
      assertThat(JSON.readTree(json.out()).path("allow_after").toString())
          .isEqualTo("[\"pypi.org\",\"files.pythonhosted.org\"]");

      Run noReason =
          run(
              "config",
              "propose",
              "--agent",
              "planner",
              "--apply",
              "--url",
              url,
              "--token-file",
              admin.toString());
      assertThat(noReason.exit()).isEqualTo(2);
      assertThat(noReason.err()).contains("--reason");

      Run refused =
          run(
              "config",
              "propose",
              "--agent",
              "planner",
              "--apply",
              "--reason",
              "CHG-9",
              "--url",
              url,
              "--token-file",
              configurer.toString());
      assertThat(refused.exit()).isEqualTo(Main.FAILED);
      assertThat(refused.err()).contains("weakening_refused").contains("governance.weaken");

      Run applied =
          run(
              "config",
              "propose",
              "--agent",
              "planner",
              "--apply",
              "--reason",
              "CHG-9",
              "--url",
              url,
              "--token-file",
              admin.toString());
      assertThat(applied.exit()).as(applied.err()).isZero();
      assertThat(applied.out())
          .contains(
              "planner: would have allowed 2 refusal(s) in 2 run(s) at files.pythonhosted.org:443")
          .contains("saved the sandbox configuration as version 2");
      assertThat(
              store
                  .audit()
                  .query(new AuditQuery("agent_sandbox.config.update", null, null, null, null, 10))
                  .getLast()
                  .data()
                  .path("reason")
                  .asText())
          .isEqualTo("CHG-9");

      Run again =
          run(
              "config",
              "propose",
              "--agent",
              "planner",
              "--url",
              url,
              "--token-file",
              admin.toString());
      assertThat(again.out()).contains("Nothing to add").contains("already allows");

      Run unknown =
          run(
              "config",
              "propose",
              "--agent",
              "nobody",
              "--url",
              url,
              "--token-file",
              admin.toString());
      assertThat(unknown.exit()).isEqualTo(Main.FAILED);
      assertThat(unknown.err()).contains("agent_not_listed");
    }
  }
}
