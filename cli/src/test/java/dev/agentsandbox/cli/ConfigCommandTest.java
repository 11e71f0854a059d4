package dev.agentsandbox.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.policy.config.Scopes;
import dev.agentsandbox.server.AgentSandboxServer;
import dev.agentsandbox.store.Store;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class ConfigCommandTest {
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

  @Test
  void putAndGetOverTheApiWithGovernanceAnswersAsExitCodes() throws Exception {
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
          store.tokens().create("configurer", Set.of(Scopes.CONFIGURE), null).secret(),
          StandardCharsets.UTF_8);
      Path doc = dir.resolve("config.json");
      Files.writeString(
          doc,
          "{\"enabled\": true, \"agents\": {\"helper\": {\"allow\": [\"api.vendor.com\"]}}, \"reason\": \"CHG-1042\"}",
          StandardCharsets.UTF_8);
      String url = server.baseUrl();

      Run refused =
          run("config", "put", doc.toString(), "--url", url, "--token-file", configurer.toString());
      assertThat(refused.exit()).isEqualTo(Main.FAILED);
      assertThat(refused.err()).contains("weakening_refused").contains("governance.weaken");

      Run accepted =
          run("config", "put", doc.toString(), "--url", url, "--token-file", admin.toString());
      assertThat(accepted.exit()).isZero();
      assertThat(accepted.out()).contains("\"version\":1");

      Run stale =
          run(
              "config",
              "put",
              doc.toString(),
              "--if-match",
              "0",
              "--url",
              url,
              "--token-file",
              admin.toString());
      assertThat(stale.exit()).isEqualTo(Main.FAILED);
      assertThat(stale.err()).contains("version_conflict");

      Run get = run("config", "get", "--url", url, "--token-file", admin.toString());
      assertThat(get.exit()).isZero();
      assertThat(
              new com.fasterxml.jackson.databind.ObjectMapper()
                  .readTree(get.out())
                  .path("agents")
                  .path("helper")
                  .path("effective_allow")
                  .toString())
          .isEqualTo("[\"api.vendor.com\"]");
      Run policy =
          run("config", "get", "--egress-policy", "--url", url, "--token-file", admin.toString());
      assertThat(
              new com.fasterxml.jackson.databind.ObjectMapper()
                  .readTree(policy.out())
                  .path("default")
                  .asText())
          .isEqualTo("unrestricted");
    }
  }
}
