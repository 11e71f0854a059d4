package dev.agentsandbox.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.net.http.HttpRequest;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
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

/**
 * {@code agent-sandbox config get|edit|apply|put|propose}: the governed documents over the admin
 * API.
 */
@Command(
    name = "config",
    mixinStandardHelpOptions = true,
    description = "Get, edit or apply the sandbox configuration or egress policy",
    footerHeading = "%nExamples:%n",
    footer = {
      "  agent-sandbox config get -o yaml > sandbox.yaml",
      "  agent-sandbox config edit --egress-policy"
    },
    subcommands = {
      ConfigCommand.Get.class,
      ConfigCommand.Edit.class,
      ConfigCommand.Apply.class,
      ConfigCommand.Put.class,
      ConfigProposeCommand.class
    })
final class ConfigCommand implements Runnable {
  @Spec CommandSpec spec;

  @Override
  public void run() {
    throw new ParameterException(
        spec.commandLine(), "name a subcommand: get, edit, apply, put or propose");
  }

  /** The API connection and which of the two documents. */
  static final class Connection {
    @Mixin ApiConnection api;

    @Option(
        names = "--egress-policy",
        description = "The instance egress policy instead of the sandbox configuration")
    boolean egressPolicy;

    GovernedDocument kind() {
      return GovernedDocument.of(egressPolicy);
    }
  }

  @Command(
      name = "get",
      mixinStandardHelpOptions = true,
      description = {
        "Print the current document, its version and, per agent, the effective allow-list.",
        "",
        "JSON by default; -o yaml for the form config edit shows."
      },
      footerHeading = "%nExamples:%n",
      footer = {"  agent-sandbox config get", "  agent-sandbox config get --egress-policy -o yaml"})
  static final class Get implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin Connection connection;

    @Option(
        names = {"-o", "--output"},
        paramLabel = "FORMAT",
        description = "json (default) or yaml")
    String format = "json";

    @Override
    public Integer call() throws IOException, InterruptedException {
      if (!format.equals("json") && !format.equals("yaml")) {
        throw new ParameterException(
            spec.commandLine(), "-o " + format + ": expected json or yaml");
      }
      GovernedDocument kind = connection.kind();
      try (AdminApi client = connection.api.open(spec)) {
        JsonNode document = client.get("read " + kind.title(), kind.path());
        PrintWriter out = spec.commandLine().getOut();
        out.print(format.equals("yaml") ? Printer.yaml(document) : Printer.json(document) + "\n");
        out.flush();
        return 0;
      }
    }
  }

  @Command(
      name = "edit",
      mixinStandardHelpOptions = true,
      description = {
        "Edit the document in $EDITOR, review the diff and loosenings, give a reason, save.",
        "",
        "Opens the current document as YAML in $VISUAL or $EDITOR (default vi). After the"
            + " editor exits, prints the diff and every loosening (computed by the same rules the"
            + " server enforces), asks for a reason (required when the change loosens anything)"
            + " and for confirmation, then saves it as the next version. If someone saved"
            + " meanwhile, the editor re-opens on their version."
      },
      footerHeading = "%nExamples:%n",
      footer = {
        "  agent-sandbox config edit",
        "  EDITOR=nano agent-sandbox config edit --egress-policy"
      })
  static final class Edit implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin Connection connection;

    @Override
    public Integer call() throws IOException, InterruptedException {
      try (AdminApi client = connection.api.open(spec)) {
        BufferedReader stdin =
            new BufferedReader(new InputStreamReader(connection.api.stdin, StandardCharsets.UTF_8));
        return new ConfigEditor(
                client,
                connection.kind(),
                connection.api.env,
                stdin,
                spec.commandLine().getOut(),
                spec.commandLine().getErr(),
                Terminal.detect(connection.api.env))
            .edit();
      }
    }
  }

  @Command(
      name = "apply",
      mixinStandardHelpOptions = true,
      description = {
        "Replace the document with a YAML or JSON file that names the version it replaces.",
        "",
        "The file's `version` says which version it replaces, so a change saved meanwhile is"
            + " never overwritten; --force-version replaces whatever is current and must be named"
            + " to do so. A change that loosens needs a reason: the file's `reason` or --reason."
      },
      footerHeading = "%nExamples:%n",
      footer = {
        "  agent-sandbox config apply -f sandbox.yaml --reason CHG-1042",
        "  agent-sandbox config apply --egress-policy -f policy.yaml"
      })
  static final class Apply implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin Connection connection;

    @Option(
        names = {"-f", "--filename"},
        required = true,
        paramLabel = "FILE",
        description = "The document (YAML or JSON), - for standard input")
    String file;

    @Option(
        names = "--reason",
        paramLabel = "TEXT",
        description = "Why (recorded in the audit log; required for a loosening)")
    String reason;

    @Option(
        names = "--force-version",
        description =
            "Replace the current version whatever the file says (may overwrite a change"
                + " saved since you read it)")
    boolean forceVersion;

    @Override
    public Integer call() throws IOException, InterruptedException {
      GovernedDocument kind = connection.kind();
      String text;
      try {
        text =
            file.equals("-")
                ? new String(connection.api.stdin.readAllBytes(), StandardCharsets.UTF_8)
                : Files.readString(Path.of(file), StandardCharsets.UTF_8);
      } catch (NoSuchFileException e) {
        throw new ParameterException(spec.commandLine(), "-f " + file + ": no such file", e);
      }
      JsonNode parsed;
      try {
        parsed = Printer.YAML.readTree(text);
      } catch (IOException e) {
        throw new ParameterException(
            spec.commandLine(),
            "read " + file + ": neither YAML nor JSON (" + e.getMessage() + ")");
      }
      if (!(parsed instanceof ObjectNode)) {
        throw new ParameterException(spec.commandLine(), "read " + file + ": not a mapping");
      }
      ObjectNode body = GovernedDocument.editable(parsed);
      if (reason != null) {
        body.put("reason", reason);
      }
      PrintWriter out = spec.commandLine().getOut();
      PrintWriter err = spec.commandLine().getErr();
      try (AdminApi client = connection.api.open(spec)) {
        if (forceVersion) {
          JsonNode current = client.get("read " + kind.title(), kind.path());
          body.put("version", current.path("version").asLong());
        } else if (!body.path("version").canConvertToLong()) {
          throw new IllegalArgumentException(
              "apply "
                  + file
                  + ": it names no version (add the `version` you read with config get, or pass"
                  + " --force-version to replace whatever is current)");
        }
        AdminApi.Answer answer =
            client.exchange(
                client
                    .request(kind.path(), Duration.ofSeconds(30))
                    .header("Content-Type", "application/json")
                    .PUT(AdminApi.json(body))
                    .build());
        if (answer.status() / 100 != 2) {
          ApiCallException refused = ApiCallException.of("apply " + file, answer);
          err.println("agent-sandbox config apply: " + refused.getMessage());
          for (JsonNode loosening : refused.body().path("loosenings")) {
            err.println(
                "  "
                    + loosening.path("kind").asText()
                    + "  "
                    + loosening.path("path").asText()
                    + ": "
                    + loosening.path("detail").asText());
          }
          if (refused.code().equals("version_conflict")) {
            err.println("(read it again with config get, or use config edit)");
          }
          err.flush();
          return Main.FAILED;
        }
        JsonNode saved = answer.json();
        JsonNode change = saved.path("change");
        ImpactPrinter.print(out, Terminal.detect(connection.api.env), change.path("impact"));
        out.println(
            "saved "
                + kind.title()
                + " as version "
                + saved.path("version").asLong()
                + (change.path("weakening").asBoolean()
                    ? " (a weakening: " + change.path("loosenings").size() + " loosening(s))"
                    : ""));
        out.flush();
        return 0;
      }
    }
  }

  @Command(
      name = "put",
      mixinStandardHelpOptions = true,
      description = {
        "Replace the document with a JSON file as is and print the server's answer.",
        "",
        "The low-level form of apply: give the version read with --if-match or a \"version\""
            + " field."
      },
      footerHeading = "%nExamples:%n",
      footer = {"  agent-sandbox config put --if-match 3 sandbox.json"})
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
      byte[] body =
          file.equals("-")
              ? connection.api.stdin.readAllBytes()
              : Files.readAllBytes(Path.of(file));
      try (AdminApi client = connection.api.open(spec)) {
        HttpRequest.Builder request =
            client
                .request(connection.kind().path(), Duration.ofSeconds(30))
                .header("Content-Type", "application/json")
                .PUT(HttpRequest.BodyPublishers.ofByteArray(body));
        if (ifMatch != null) {
          request.header("If-Match", "\"" + ifMatch + "\"");
        }
        AdminApi.Answer answer = client.exchange(request.build());
        boolean ok = answer.status() / 100 == 2;
        PrintWriter print = ok ? spec.commandLine().getOut() : spec.commandLine().getErr();
        print.println(answer.body());
        print.flush();
        return ok ? 0 : Main.FAILED;
      }
    }
  }
}
