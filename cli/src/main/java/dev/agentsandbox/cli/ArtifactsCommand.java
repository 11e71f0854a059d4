package dev.agentsandbox.cli;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code agent-sandbox artifacts list|get}: the files a run left in {@code /workspace/out}. */
@Command(
    name = "artifacts",
    mixinStandardHelpOptions = true,
    description = "List and download the files runs left in /workspace/out",
    footerHeading = "%nExamples:%n",
    footer = {
      "  agent-sandbox artifacts list RUN_ID",
      "  agent-sandbox artifacts get RUN_ID -o ./review"
    },
    subcommands = {ArtifactsCommand.ListArtifacts.class, ArtifactsCommand.Get.class})
final class ArtifactsCommand implements Runnable {
  @Spec CommandSpec spec;

  @Override
  public void run() {
    throw new ParameterException(spec.commandLine(), "name a subcommand: list or get");
  }

  @Command(
      name = "list",
      aliases = "ls",
      mixinStandardHelpOptions = true,
      description = "List a run's artifacts: path, size and SHA-256.",
      footerHeading = "%nExamples:%n",
      footer = {
        "  agent-sandbox artifacts list RUN_ID",
        "  agent-sandbox artifacts list RUN_ID -o json | jq -r '.artifacts[].path'"
      })
  static final class ListArtifacts implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin ApiConnection api;
    @Mixin Printer printer;

    @Parameters(paramLabel = "RUN_ID", description = "The run")
    String runId;

    @Override
    public Integer call() throws IOException, InterruptedException {
      try (AdminApi client = api.open(spec)) {
        JsonNode json = new ArtifactDownloader(client, runId).listingJson();
        PrintWriter out = spec.commandLine().getOut();
        if (printer.document(out, json)) {
          return 0;
        }
        List<List<String>> rows = new ArrayList<>();
        for (ArtifactDownloader.Listed a : ArtifactDownloader.listing(json).artifacts()) {
          rows.add(List.of(TimelineView.bounded(a.path()), Long.toString(a.size()), a.sha256()));
        }
        printer.table(out, List.of("PATH", "SIZE", "SHA256"), rows);
        return 0;
      }
    }
  }

  @Command(
      name = "get",
      mixinStandardHelpOptions = true,
      description = {
        "Download a run's artifacts into a folder, each checked against its SHA-256.",
        "",
        "Every artifact, or the one named PATH (or those under PATH/). A file whose size or"
            + " SHA-256 differs from the listing is deleted and reported; a name that would land"
            + " outside the folder, or through a symbolic link, is refused; an existing file is"
            + " never replaced. Prints each file written; exits 1 if any was refused."
      },
      footerHeading = "%nExamples:%n",
      footer = {
        "  agent-sandbox artifacts get RUN_ID -o ./review",
        "  agent-sandbox artifacts get RUN_ID result.json -o ."
      })
  static final class Get implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin ApiConnection api;

    @Parameters(index = "0", paramLabel = "RUN_ID", description = "The run")
    String runId;

    @Parameters(
        index = "1",
        arity = "0..1",
        paramLabel = "PATH",
        description = "Only this artifact, or those under this folder")
    String path;

    @Option(
        names = {"-o", "--out"},
        paramLabel = "DIR",
        description = "The folder to write into, created if missing (default: the current one)")
    Path dir = Path.of(".");

    @Override
    public Integer call() throws IOException, InterruptedException {
      try (AdminApi client = api.open(spec)) {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        return save(client, runId, path, dir, out, err);
      }
    }
  }

  /**
   * Downloads the run's artifacts (all, or {@code only} and those under it) into {@code dir},
   * printing each file written on {@code written} and each refusal on {@code err}. Returns 0 when
   * every wanted artifact was saved (and, when {@code only} was named, some matched), else 1.
   */
  static int save(
      AdminApi client, String runId, String only, Path dir, PrintWriter written, PrintWriter err)
      throws IOException, InterruptedException {
    ArtifactDownloader downloader = new ArtifactDownloader(client, runId);
    ArtifactDownloader.Listing listing = ArtifactDownloader.listing(downloader.listingJson());
    List<ArtifactDownloader.Listed> wanted = new ArrayList<>();
    for (ArtifactDownloader.Listed a : listing.artifacts()) {
      if (only == null
          || a.path().equals(only)
          || a.path().startsWith(only.endsWith("/") ? only : only + "/")) {
        wanted.add(a);
      }
    }
    if (wanted.isEmpty()) {
      err.println(
          "agent-sandbox: run "
              + runId
              + (only == null
                  ? " left no artifacts (store: " + listing.store() + ")"
                  : " has no artifact "
                      + TimelineView.bounded(only)
                      + " (artifacts list "
                      + runId
                      + ")"));
      err.flush();
      return only == null ? 0 : Main.FAILED;
    }
    int refused = 0;
    for (ArtifactDownloader.Listed a : wanted) {
      try {
        Path file = downloader.download(a, dir);
        written.println(file);
        written.flush();
      } catch (ArtifactDownloader.UnableToDownloadArtifactException | ApiCallException e) {
        refused++;
        err.println("agent-sandbox: " + e.getMessage());
        err.flush();
      }
    }
    if (refused > 0) {
      err.println(
          "agent-sandbox: "
              + refused
              + " of "
              + wanted.size()
              + " artifacts of run "
              + runId
              + " were not saved");
      err.flush();
      return Main.FAILED;
    }
    return 0;
  }
}
