package dev.agentsandbox.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.agentsandbox.policy.config.ConfigProblem;
import dev.agentsandbox.policy.config.InvalidConfigException;
import dev.agentsandbox.policy.config.Loosening;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * {@code config edit}, like {@code kubectl edit}: the document as YAML in {@code $EDITOR}, then the
 * diff and the loosenings, then a reason (required for a loosening) and a confirmation, then the
 * save. A version conflict re-opens the editor on the newer version; an invalid document re-opens
 * it with the problems on top. Every loop is bounded.
 */
final class ConfigEditor {
  /** How many times the editor is re-opened (conflicts, invalid documents) before giving up. */
  private static final int MAX_ROUNDS = 10;

  private final AdminApi api;
  private final GovernedDocument kind;
  private final Map<String, String> env;
  private final BufferedReader stdin;
  private final PrintWriter out;
  private final PrintWriter err;
  private final Terminal terminal;

  ConfigEditor(
      AdminApi api,
      GovernedDocument kind,
      Map<String, String> env,
      BufferedReader stdin,
      PrintWriter out,
      PrintWriter err,
      Terminal terminal) {
    this.api = api;
    this.kind = kind;
    this.env = env;
    this.stdin = stdin;
    this.out = out;
    this.err = err;
    this.terminal = terminal;
  }

  int edit() throws IOException, InterruptedException {
    Path file =
        Files.createTempFile(
            "agent-sandbox-" + kind.key() + "-",
            ".yaml",
            PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
    boolean keep = false;
    try {
      List<String> notes = List.of();
      ObjectNode current = GovernedDocument.editable(api.get("read " + kind.title(), kind.path()));
      String shown = null;
      for (int round = 0; round < MAX_ROUNDS; round++) {
        if (shown == null) {
          shown = Printer.yaml(current);
        }
        Files.writeString(file, header(notes) + shown, StandardCharsets.UTF_8);
        runEditor(file);
        String edited = Files.readString(file, StandardCharsets.UTF_8);
        JsonNode parsed;
        try {
          parsed = Printer.YAML.readTree(edited);
        } catch (IOException e) {
          notes = List.of("not valid YAML: " + firstLine(e.getMessage()));
          shown = withoutHeader(edited);
          continue;
        }
        if (!(parsed instanceof ObjectNode after)) {
          notes = List.of("the document must be a mapping (field: value)");
          shown = withoutHeader(edited);
          continue;
        }
        if (GovernedDocument.editable(after).equals(current)) {
          err.println("agent-sandbox config edit: no changes; nothing saved");
          err.flush();
          return 0;
        }
        List<Loosening> loosenings;
        try {
          loosenings = kind.loosenings(current, after);
        } catch (InvalidConfigException e) {
          notes = problems(e.problems());
          shown = withoutHeader(edited);
          continue;
        }
        printDiff(current, after);
        printLoosenings(loosenings);
        printImpact(current, after);
        String reason = askReason(after, !loosenings.isEmpty());
        if (reason == null) {
          err.println(
              "agent-sandbox config edit: a change that loosens needs a reason; nothing saved"
                  + " (your edit is kept in "
                  + file
                  + ")");
          keep = true;
          return Main.FAILED;
        }
        if (!confirm(
            "Save "
                + kind.title()
                + " as version "
                + (current.path("version").asLong() + 1)
                + "?")) {
          err.println(
              "agent-sandbox config edit: not confirmed; nothing saved (your edit is kept in "
                  + file
                  + ")");
          keep = true;
          return Main.FAILED;
        }
        ObjectNode body = GovernedDocument.editable(after);
        body.put("version", current.path("version").asLong());
        if (!reason.isEmpty()) {
          body.put("reason", reason);
        } else {
          body.remove("reason");
        }
        AdminApi.Answer answer =
            api.exchange(
                api.request(kind.path(), Duration.ofSeconds(30))
                    .header("Content-Type", "application/json")
                    .PUT(AdminApi.json(body))
                    .build());
        if (answer.status() / 100 == 2) {
          JsonNode saved = answer.json();
          out.println(
              terminal.green("saved")
                  + " "
                  + kind.title()
                  + " as version "
                  + saved.path("version").asLong()
                  + (loosenings.isEmpty()
                      ? ""
                      : " (a weakening, reason recorded in the audit log)"));
          out.flush();
          return 0;
        }
        ApiCallException refused = ApiCallException.of("save " + kind.title(), answer);
        switch (refused.code()) {
          case "version_conflict" -> {
            ObjectNode newer =
                GovernedDocument.editable(api.get("read " + kind.title(), kind.path()));
            Path previous =
                Files.createTempFile(
                    "agent-sandbox-" + kind.key() + "-yours-",
                    ".yaml",
                    PosixFilePermissions.asFileAttribute(
                        PosixFilePermissions.fromString("rw-------")));
            Files.writeString(previous, edited, StandardCharsets.UTF_8);
            err.println(
                terminal.yellow(
                    "agent-sandbox config edit: someone saved version "
                        + newer.path("version").asLong()
                        + " while you edited version "
                        + current.path("version").asLong()
                        + "; re-opening the editor on it (your edit is kept in "
                        + previous
                        + ")"));
            err.flush();
            notes =
                List.of(
                    "version "
                        + newer.path("version").asLong()
                        + " was saved while you edited;"
                        + " this is it. Your edit is kept in "
                        + previous
                        + ".");
            current = newer;
            shown = null;
          }
          case "invalid_config" -> {
            notes = new ArrayList<>();
            for (JsonNode problem : refused.body().path("problems")) {
              notes.add(problem.path("path").asText() + ": " + problem.path("message").asText());
            }
            shown = withoutHeader(edited);
          }
          default -> {
            err.println("agent-sandbox config edit: " + refused.getMessage());
            err.println("(your edit is kept in " + file + ")");
            err.flush();
            keep = true;
            return Main.FAILED;
          }
        }
      }
      err.println(
          "agent-sandbox config edit: gave up after " + MAX_ROUNDS + " rounds; nothing saved");
      return Main.FAILED;
    } finally {
      if (!keep) {
        Files.deleteIfExists(file);
      }
    }
  }

  private void runEditor(Path file) throws IOException, InterruptedException {
    String editor = env.getOrDefault("VISUAL", env.getOrDefault("EDITOR", "vi"));
    if (editor.isBlank()) {
      editor = "vi";
    }
    // Through sh so that EDITOR="code --wait" works as it does for git and kubectl.
    Process process =
        new ProcessBuilder("sh", "-c", editor + " \"$1\"", "agent-sandbox-editor", file.toString())
            .inheritIO()
            .start();
    int status = process.waitFor();
    if (status != 0) {
      throw new IOException(
          "run the editor "
              + editor
              + " on "
              + file
              + ": it exited with status "
              + status
              + " (set EDITOR or VISUAL); nothing saved");
    }
  }

  private static String header(List<String> notes) {
    StringBuilder text = new StringBuilder();
    text.append("# Edit and save; quit without saving or leave it unchanged to cancel.\n");
    text.append("# Keep `version`: it names the version you are changing.\n");
    text.append("# A change that loosens the fence asks for a reason before it is saved.\n");
    for (String note : notes) {
      text.append("# ").append(note.replace("\n", " ")).append('\n');
    }
    text.append("#\n");
    return text.toString();
  }

  /** The user's text without the header this editor wrote (their own comments stay). */
  private static String withoutHeader(String text) {
    List<String> lines = new ArrayList<>(text.lines().toList());
    while (!lines.isEmpty() && lines.getFirst().startsWith("#")) {
      lines.removeFirst();
    }
    return String.join("\n", lines) + "\n";
  }

  private static List<String> problems(List<ConfigProblem> problems) {
    List<String> notes = new ArrayList<>();
    notes.add("not saved, the document has problems:");
    problems.forEach(p -> notes.add("  " + p.path() + ": " + p.message()));
    return notes;
  }

  private void printDiff(JsonNode before, JsonNode after) throws IOException {
    DocumentDiff.print(
        err,
        terminal,
        kind.key() + " (version " + before.path("version").asLong() + ")",
        kind.key() + " (edited)",
        before,
        after);
  }

  /**
   * The server's impact of the change on recorded egress, from a dry run (which stores and audits
   * nothing); a preview the server refuses (an invalid document, a conflict) shows nothing here,
   * since the save that follows reports it.
   */
  private void printImpact(JsonNode current, JsonNode after)
      throws IOException, InterruptedException {
    ObjectNode body = GovernedDocument.editable(after);
    body.put("version", current.path("version").asLong());
    AdminApi.Answer answer =
        api.exchange(
            api.request(kind.path() + "?dry_run=true", Duration.ofSeconds(60))
                .header("Content-Type", "application/json")
                .PUT(AdminApi.json(body))
                .build());
    if (answer.status() == 200) {
      ImpactPrinter.print(err, terminal, answer.json().path("change").path("impact"));
    } else if (answer.status() == 403) {
      ImpactPrinter.print(err, terminal, answer.json().path("impact"));
    }
  }

  private void printLoosenings(List<Loosening> loosenings) {
    if (loosenings.isEmpty()) {
      err.println("This change loosens nothing.");
    } else {
      err.println(
          terminal.yellow(
              "This change LOOSENS the fence ("
                  + loosenings.size()
                  + "); it needs the governance.weaken scope and a reason:"));
      for (Loosening loosening : loosenings) {
        err.println(
            "  "
                + terminal.yellow(loosening.kind().wireName())
                + "  "
                + loosening.path()
                + ": "
                + loosening.detail());
      }
    }
    err.flush();
  }

  /** The reason: the document's own, or asked for; null when a loosening got none. */
  private String askReason(JsonNode after, boolean required) throws IOException {
    String inFile = after.path("reason").asText("").strip();
    if (!inFile.isEmpty()) {
      err.println("Reason (from the document): " + inFile);
      err.flush();
      return inFile;
    }
    err.print(required ? "Reason (required): " : "Reason (optional, recorded in the audit log): ");
    err.flush();
    String line = stdin.readLine();
    String reason = line == null ? "" : line.strip();
    if (required && reason.isEmpty()) {
      return null;
    }
    return reason;
  }

  private boolean confirm(String question) throws IOException {
    err.print(question + " [y/N]: ");
    err.flush();
    String line = stdin.readLine();
    return line != null
        && List.of("y", "yes").contains(line.strip().toLowerCase(java.util.Locale.ROOT));
  }

  private static String firstLine(String message) {
    if (message == null) {
      return "unreadable";
    }
    int newline = message.indexOf('\n');
    return newline < 0 ? message : message.substring(0, newline);
  }
}
