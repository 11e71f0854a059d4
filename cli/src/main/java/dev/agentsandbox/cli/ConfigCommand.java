package dev.agentsandbox.cli;

import java.io.IOException;
import java.net.http.HttpRequest;
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

  /** The API connection and which of the two documents. */
  static final class Connection {
    @Mixin ApiConnection api;

    @Option(
        names = "--egress-policy",
        description = "The instance egress policy instead of the sandbox configuration")
    boolean egressPolicy;

    String path() {
      return egressPolicy
          ? "/api/admin/platform/egress-policy"
          : "/api/admin/platform/agent-sandbox";
    }
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
      return ApiConnection.send(
          spec,
          connection.api.request(spec, connection.path(), Duration.ofSeconds(30)).GET().build());
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
          connection
              .api
              .request(spec, connection.path(), Duration.ofSeconds(30))
              .header("Content-Type", "application/json")
              .PUT(HttpRequest.BodyPublishers.ofByteArray(body));
      if (ifMatch != null) {
        request.header("If-Match", "\"" + ifMatch + "\"");
      }
      return ApiConnection.send(spec, request.build());
    }
  }
}
