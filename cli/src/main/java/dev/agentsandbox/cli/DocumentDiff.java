package dev.agentsandbox.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.github.difflib.DiffUtils;
import com.github.difflib.UnifiedDiffUtils;
import java.io.IOException;
import java.io.PrintWriter;
import java.util.List;

/** A governed document's change as a unified diff of its YAML, coloured where the terminal is. */
final class DocumentDiff {
  private DocumentDiff() {}

  /** Prints the diff from {@code before} to {@code after} (both editable documents). */
  static void print(
      PrintWriter out,
      Terminal terminal,
      String beforeName,
      String afterName,
      JsonNode before,
      JsonNode after)
      throws IOException {
    List<String> old = Printer.yaml(GovernedDocument.editable(before)).lines().toList();
    List<String> now = Printer.yaml(GovernedDocument.editable(after)).lines().toList();
    for (String line :
        UnifiedDiffUtils.generateUnifiedDiff(
            beforeName, afterName, old, DiffUtils.diff(old, now), 3)) {
      if (line.startsWith("+") && !line.startsWith("+++")) {
        out.println(terminal.green(line));
      } else if (line.startsWith("-") && !line.startsWith("---")) {
        out.println(terminal.red(line));
      } else {
        out.println(line);
      }
    }
    out.flush();
  }
}
