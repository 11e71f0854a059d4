package dev.agentsandbox.cli;

import java.io.IOException;
import java.io.PrintWriter;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code agent-sandbox config get|put}: the governed documents over the admin API. */
@Command(
    name = "config",
    mixinStandardHelpOptions = true,
    description =
        "Reads and replaces the sandbox configuration or the egress policy over the admin API.",
    subcommands = {ConfigCommand.Get.class, ConfigCommand.Put.class})
final class ConfigCommand implements Runnable {
  @Spec CommandSpec spec;

  @Override
  public void run() {
    throw new ParameterException(spec.commandLine(), "name a subcommand: get or put");
  }

  /** Where the API is and how to authenticate. */
  static final class Connection {
    @Option(
        names = "--url",
        paramLabel = "URL",
        description =
            "Base URL of the service (env AGENT_SANDBOX_URL; default http://127.0.0.1:8080)")
    String url;

    @Option(
        names = "--token-file",
        paramLabel = "FILE",
        description = "Read the token from this file (default: env AGENT_SANDBOX_TOKEN)")
    Path tokenFile;

    @Option(
        names = "--egress-policy",
        description = "The instance egress policy instead of the sandbox configuration")
    boolean egressPolicy;

    URI uri() {
      String base =
          url != null
              ? url
              : System.getenv().getOrDefault("AGENT_SANDBOX_URL", "http://127.0.0.1:8080");
      String path =
          egressPolicy ? "/api/admin/platform/egress-policy" : "/api/admin/platform/agent-sandbox";
      return URI.create(base.replaceAll("/+$", "") + path);
    }

    String token(CommandSpec spec) throws IOException {
      // Tokens come from a file or the environment, never the command line (it shows in ps).
      String token =
          tokenFile != null
              ? Files.readString(tokenFile, StandardCharsets.UTF_8).strip()
              : System.getenv("AGENT_SANDBOX_TOKEN");
      if (token == null || token.isBlank()) {
        throw new ParameterException(
            spec.commandLine(), "no token: set AGENT_SANDBOX_TOKEN or pass --token-file FILE");
      }
      return token;
    }
  }

  static int send(CommandSpec spec, HttpRequest request) throws IOException, InterruptedException {
    HttpResponse<String> response;
    try (HttpClient client =
        HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build()) {
      response = client.send(request, HttpResponse.BodyHandlers.ofString());
    } catch (ConnectException e) {
      throw new IllegalStateException(
          "reach " + request.uri() + ": connection refused (is agent-sandbox serve running there?)",
          e);
    }
    PrintWriter out =
        response.statusCode() / 100 == 2
            ? spec.commandLine().getOut()
            : spec.commandLine().getErr();
    out.println(response.body());
    out.flush();
    return response.statusCode() / 100 == 2 ? 0 : Main.FAILED;
  }

  @Command(
      name = "get",
      mixinStandardHelpOptions = true,
      description =
          "Prints the current document (with version and, for the configuration, effective_allow).")
  static final class Get implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin Connection connection;

    @Override
    public Integer call() throws IOException, InterruptedException {
      return send(
          spec,
          HttpRequest.newBuilder(connection.uri())
              .timeout(Duration.ofSeconds(30))
              .header("Authorization", "Bearer " + connection.token(spec))
              .GET()
              .build());
    }
  }

  @Command(
      name = "put",
      mixinStandardHelpOptions = true,
      description =
          "Replaces the document with FILE (- for stdin); give the version read with --if-match or a \"version\" field.")
  static final class Put implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin Connection connection;

    @Parameters(paramLabel = "FILE", description = "The JSON document, or - for stdin")
    String file;

    @Option(
        names = "--if-match",
        paramLabel = "VERSION",
        description = "The version this change replaces")
    Long ifMatch;

    @Override
    public Integer call() throws IOException, InterruptedException {
      byte[] body = file.equals("-") ? System.in.readAllBytes() : Files.readAllBytes(Path.of(file));
      HttpRequest.Builder request =
          HttpRequest.newBuilder(connection.uri())
              .timeout(Duration.ofSeconds(30))
              .header("Authorization", "Bearer " + connection.token(spec))
              .header("Content-Type", "application/json")
              .PUT(HttpRequest.BodyPublishers.ofByteArray(body));
      if (ifMatch != null) {
        request.header("If-Match", "\"" + ifMatch + "\"");
      }
      return send(spec, request.build());
    }
  }
}
