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
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;

/** Where the admin API is and how to authenticate: the options every API command shares. */
final class ApiConnection {
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

  URI uri(String path) {
    String base =
        url != null
            ? url
            : System.getenv().getOrDefault("AGENT_SANDBOX_URL", "http://127.0.0.1:8080");
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

  HttpRequest.Builder request(CommandSpec spec, String path, Duration timeout) throws IOException {
    return HttpRequest.newBuilder(uri(path))
        .timeout(timeout)
        .header("Authorization", "Bearer " + token(spec));
  }

  /** Sends, prints the body to stdout on success or stderr otherwise; returns the exit code. */
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
    boolean ok = response.statusCode() / 100 == 2;
    PrintWriter out = ok ? spec.commandLine().getOut() : spec.commandLine().getErr();
    out.println(response.body());
    out.flush();
    return ok ? 0 : Main.FAILED;
  }
}
