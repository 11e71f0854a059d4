package dev.agentsandbox.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import dev.agentsandbox.cli.CommandLineTest.Run;
import dev.agentsandbox.policy.config.Scopes;
import dev.agentsandbox.server.AgentSandboxServer;
import dev.agentsandbox.store.Store;
import java.io.ByteArrayInputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.MethodSource;
import picocli.CommandLine;

/**
 * Where the CLI sends a token. The saved context "prod" is a real control plane on loopback; the
 * "other host" is a listener on another loopback port that records every Authorization header it is
 * sent, standing for a typo, a hostile link or another team's server. Each row tries to make prod's
 * token (from the context or from the environment) go there; none may.
 */
class TokenDestinationTest {
  @TempDir Path dir;

  private Store store;
  private AgentSandboxServer prod;
  private HttpServer other;
  private String prodUrl;
  private String otherUrl;
  private String prodToken;
  private final List<String> otherSaw = new ArrayList<>();
  private Map<String, String> env;

  @BeforeEach
  void start() throws Exception {
    store = Store.open("jdbc:sqlite:" + dir.resolve("store.db"));
    prod =
        AgentSandboxServer.start(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), store);
    prodUrl = prod.baseUrl();
    prodToken = store.tokens().create("prod-reader", Set.of(Scopes.READ), null).secret();
    other = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    other.createContext(
        "/",
        exchange -> {
          synchronized (otherSaw) {
            otherSaw.add(String.valueOf(exchange.getRequestHeaders().getFirst("Authorization")));
          }
          byte[] body = "{\"runs\": []}".getBytes(StandardCharsets.UTF_8);
          exchange.getResponseHeaders().add("Content-Type", "application/json");
          exchange.sendResponseHeaders(200, body.length);
          exchange.getResponseBody().write(body);
          exchange.close();
        });
    other.start();
    otherUrl = "http://127.0.0.1:" + other.getAddress().getPort();
    Path config = dir.resolve("config.yaml");
    Path tokenFile = Files.writeString(dir.resolve("prod-token"), prodToken + "\n");
    Files.writeString(
        config,
        "current-context: prod\ncontexts:\n  prod:\n    url: "
            + prodUrl
            + "\n    token-file: "
            + tokenFile
            + "\n");
    env = new HashMap<>(Map.of(Contexts.ENV, config.toString()));
  }

  @AfterEach
  void stop() {
    other.stop(0);
    prod.close();
    store.close();
  }

  private Run runsList(Map<String, String> environment, String stdin, String... options) {
    CommandLine commandLine = Main.commandLine();
    RunsCommand.ListRuns list =
        commandLine.getSubcommands().get("runs").getSubcommands().get("list").getCommand();
    list.api.env = environment;
    list.api.stdin = new ByteArrayInputStream(stdin.getBytes(StandardCharsets.UTF_8));
    List<String> args = new ArrayList<>(List.of("runs", "list", "-o", "json"));
    args.addAll(List.of(options));
    return CommandLineTest.run(commandLine, args.toArray(String[]::new));
  }

  static Stream<Arguments> attempts() {
    return Stream.of(
        Arguments.of("--url to another host with the current context", "", "--url OTHER"),
        Arguments.of("--url with a trailing path that is still another host", "", "--url OTHER/"),
        Arguments.of("AGENT_SANDBOX_URL to another host with the current context", "URL", ""),
        Arguments.of("--context prod and --url to another host", "", "--context prod --url OTHER"),
        Arguments.of(
            "AGENT_SANDBOX_TOKEN paired with AGENT_SANDBOX_URL=prod, then --url elsewhere",
            "TOKEN_FOR_PROD",
            "--url OTHER"),
        Arguments.of(
            "AGENT_SANDBOX_TOKEN alone (meant for the default URL), then --url elsewhere",
            "TOKEN",
            "--url OTHER"),
        Arguments.of(
            "localhost is not the same server name as 127.0.0.1", "", "--url LOCALHOST_OTHER"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource
  void attempts(String why, String environment, String options) {
    Map<String, String> e = new HashMap<>(env);
    switch (environment) {
      case "URL" -> e.put("AGENT_SANDBOX_URL", otherUrl);
      case "TOKEN_FOR_PROD" -> {
        e.put("AGENT_SANDBOX_URL", prodUrl);
        e.put("AGENT_SANDBOX_TOKEN", prodToken);
      }
      case "TOKEN" -> e.put("AGENT_SANDBOX_TOKEN", prodToken);
      default -> {}
    }
    String[] args =
        options.isEmpty()
            ? new String[0]
            : options
                .replace("LOCALHOST_OTHER", "http://localhost:" + other.getAddress().getPort())
                .replace("OTHER", otherUrl)
                .split(" ");
    Run refused = runsList(e, "", args);
    assertThat(refused.exit()).as(why + ": " + refused.err()).isEqualTo(Main.USAGE);
    assertThat(refused.err())
        .contains("no token for ", "sent only to its own URL", "--token-file")
        .doesNotContain(prodToken);
    synchronized (otherSaw) {
      assertThat(otherSaw).as(why + ": what the other host was sent").isEmpty();
    }
  }

  @Test
  void anExplicitTokenGoesWhereTheExplicitUrlSaysAndOnlyThatOne() {
    Run sent =
        runsList(env, "asb_the-other-hosts-own-token\n", "--url", otherUrl, "--token-file", "-");
    assertThat(sent.exit()).as(sent.err()).isZero();
    synchronized (otherSaw) {
      assertThat(otherSaw).containsExactly("Bearer asb_the-other-hosts-own-token");
    }
  }

  @ParameterizedTest(name = "{0} is prod''s own URL")
  @CsvSource({"TRAILING_SLASH", "UPPER_CASE_SCHEME", "AS_SAVED"})
  void theContextsTokenGoesToTheContextsUrlHoweverItIsWritten(String form) {
    String url =
        switch (form) {
          case "TRAILING_SLASH" -> prodUrl + "/";
          case "UPPER_CASE_SCHEME" -> prodUrl.replace("http://", "HTTP://");
          default -> prodUrl;
        };
    Run listed = runsList(env, "", "--url", url);
    assertThat(listed.exit()).as(listed.err()).isZero();
    assertThat(listed.out()).contains("\"runs\"");
    Run current = runsList(env, "");
    assertThat(current.exit()).as(current.err()).isZero();
    synchronized (otherSaw) {
      assertThat(otherSaw).isEmpty();
    }
  }

  @Test
  void anEnvironmentPairStillWorks() {
    Map<String, String> e =
        new HashMap<>(Map.of(Contexts.ENV, dir.resolve("none.yaml").toString()));
    e.put("AGENT_SANDBOX_URL", prodUrl);
    e.put("AGENT_SANDBOX_TOKEN", prodToken);
    Run listed = runsList(e, "");
    assertThat(listed.exit()).as(listed.err()).isZero();
  }

  /**
   * Plain HTTP to a host that is not this machine is refused before anything is sent (the address
   * is in .invalid, which never resolves: nothing could be sent even if the check were gone), by
   * login and by every API command.
   */
  @Test
  void plainHttpToAnotherMachineIsRefusedUnlessInsecure() {
    Run command =
        runsList(env, "asb_x\n", "--url", "http://sandbox.invalid:8080", "--token-file", "-");
    assertThat(command.exit()).isEqualTo(Main.USAGE);
    assertThat(command.err()).contains("in clear text", "--insecure");

    CommandLine commandLine = Main.commandLine();
    LoginCommand login = commandLine.getSubcommands().get("login").getCommand();
    login.env = env;
    login.stdin = new ByteArrayInputStream("asb_x\n".getBytes(StandardCharsets.UTF_8));
    Run refused =
        CommandLineTest.run(
            commandLine, "login", "--url", "http://sandbox.invalid:8080", "--token-file", "-");
    assertThat(refused.exit()).isEqualTo(Main.USAGE);
    assertThat(refused.err()).contains("log in to http://sandbox.invalid:8080", "in clear text");
  }

  @ParameterizedTest(name = "{0}: loopback {1}, clear text over a network {2}")
  @CsvSource({
    "http://127.0.0.1:8080, true, false",
    "http://127.9.9.9:8080, true, false",
    "http://localhost:8080, true, false",
    "http://[::1]:8080, true, false",
    "http://10.0.0.5:8080, false, true",
    "http://sandbox.example, false, true",
    "http://127.0.0.1.example.org, false, true",
    "http://localhost.evil.example, false, true",
    "https://10.0.0.5:8443, false, false",
  })
  void whatCountsAsThisMachine(String url, boolean loopback, boolean cleartext) {
    ServerUrl parsed = ServerUrl.parse(url);
    assertThat(parsed.loopback()).as(url).isEqualTo(loopback);
    assertThat(parsed.cleartextOverNetwork()).as(url).isEqualTo(cleartext);
  }

  @ParameterizedTest(name = "{0}")
  @CsvSource({
    "ftp://host",
    "http://user:pass@host",
    "http://host/?q=1",
    "http://host/#x",
    "not a url"
  })
  void notAServersUrl(String url) {
    assertThat(ServerUrl.tryParse(url)).isEmpty();
  }
}
