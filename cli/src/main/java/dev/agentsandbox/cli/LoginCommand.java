package dev.agentsandbox.cli;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code agent-sandbox login}: names a server and the file holding its token in the config file,
 * after checking that the server accepts the token, and makes it the current context.
 */
@Command(
    name = "login",
    mixinStandardHelpOptions = true,
    description = {
      "Save a server and its token file as the current context",
      "",
      "The config file ($"
          + Contexts.ENV
          + ", default ~/.config/agent-sandbox/config.yaml)"
          + " records the URL and the token file's path, never the token. A token read from"
          + " standard input (--token-file -) is written to a file of its own beside the config"
          + " file, readable by you only. The server is asked once, so a wrong URL or a"
          + " revoked token is caught now. The token is sent only to this URL afterwards; plain"
          + " http:// to a host other than this machine is refused unless --insecure."
    },
    footerHeading = "%nExamples:%n",
    footer = {
      "  agent-sandbox login --url http://127.0.0.1:8080 --token-file data/admin-token",
      "  pass show sandbox/prod | agent-sandbox login --name prod --url https://sb.example"
          + " --token-file -",
      "  agent-sandbox runs list --context prod"
    })
final class LoginCommand implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Option(names = "--url", required = true, paramLabel = "URL", description = "The service")
  String url;

  @Option(
      names = "--token-file",
      required = true,
      paramLabel = "FILE",
      description = "The file holding the token, - for standard input")
  String tokenFile;

  @Option(
      names = "--insecure",
      description =
          "Accept plain http:// to a host other than this machine (the token crosses the network"
              + " in clear); recorded in the context")
  boolean insecure;

  @Option(
      names = "--name",
      paramLabel = "NAME",
      description = "The context's name (default: default)")
  String name = "default";

  /** Seam for tests: the environment and standard input. */
  Map<String, String> env = System.getenv();

  InputStream stdin = System.in;

  @Override
  public Integer call() throws IOException, InterruptedException {
    ServerUrl server = checkUrl();
    if (!name.matches("[A-Za-z0-9][A-Za-z0-9._-]{0,62}")) {
      throw new ParameterException(
          spec.commandLine(),
          "--name " + name + ": use letters, digits, dots, hyphens and underscores (at most 63)");
    }
    Path configFile = Contexts.location(env);
    Contexts contexts = Contexts.load(configFile);
    Path tokenPath;
    String token;
    if (tokenFile.equals("-")) {
      token = new String(stdin.readNBytes(64 * 1024), StandardCharsets.UTF_8).strip();
      tokenPath = configFile.toAbsolutePath().getParent().resolve("tokens").resolve(name);
    } else {
      tokenPath = Path.of(tokenFile).toAbsolutePath();
      token = ApiConnection.read(tokenPath, "--token-file").strip();
    }
    if (token.isEmpty()) {
      throw new ParameterException(spec.commandLine(), "--token-file " + tokenFile + ": empty");
    }
    PrintWriter out = spec.commandLine().getOut();
    String checked = check(server, token);
    if (tokenFile.equals("-")) {
      Files.createDirectories(
          tokenPath.getParent(),
          PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
      Files.deleteIfExists(tokenPath);
      Files.createFile(
          tokenPath,
          PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
      Files.writeString(tokenPath, token + "\n", StandardCharsets.UTF_8);
    }
    contexts
        .with(
            new Contexts.Context(
                name, server.toString(), tokenPath, insecure && server.cleartextOverNetwork()))
        .save();
    out.println(
        "context "
            + name
            + ": "
            + server
            + " ("
            + checked
            + "), saved in "
            + configFile
            + " and made current");
    out.flush();
    return 0;
  }

  /** The URL, refused before any token is read or sent when it is not one or not safe. */
  private ServerUrl checkUrl() {
    ServerUrl server;
    try {
      server = ServerUrl.parse(url);
    } catch (IllegalArgumentException e) {
      throw new ParameterException(spec.commandLine(), e.getMessage(), e);
    }
    if (server.cleartextOverNetwork() && !insecure) {
      throw new ParameterException(
          spec.commandLine(),
          "log in to "
              + server
              + ": plain http:// to a host other than this machine would send the token in clear"
              + " text, now and on every command (use https://, or --insecure if the network is"
              + " trusted)");
    }
    return server;
  }

  /**
   * Asks the server once who the token is; returns what it said: the token's name and the agents it
   * is limited to, and whether it may read runs.
   */
  private String check(ServerUrl server, String token) throws IOException, InterruptedException {
    try (AdminApi api = new AdminApi(server.toString(), token)) {
      AdminApi.Answer answer =
          api.exchange(api.request(AdminApi.TOKEN, java.time.Duration.ofSeconds(15)).GET().build());
      if (answer.status() / 100 != 2) {
        throw ApiCallException.of("log in to " + server, answer);
      }
      com.fasterxml.jackson.databind.JsonNode self = answer.json();
      StringBuilder said =
          new StringBuilder("token accepted: ")
              .append(TerminalText.line(self.path("name").asText()));
      com.fasterxml.jackson.databind.JsonNode agents = self.path("agents");
      if (agents.isArray()) {
        List<String> names = new java.util.ArrayList<>();
        agents.forEach(agent -> names.add(agent.asText()));
        said.append(", limited to agents ").append(String.join(", ", names));
      } else {
        said.append(", every agent");
      }
      boolean reads = false;
      for (com.fasterxml.jackson.databind.JsonNode scope : self.path("scopes")) {
        reads |= scope.asText().equals("agent_sandbox.read");
      }
      if (!reads) {
        said.append("; it cannot read runs");
      }
      return said.toString();
    }
  }
}
