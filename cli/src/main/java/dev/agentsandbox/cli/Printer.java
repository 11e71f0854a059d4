package dev.agentsandbox.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.SerializableString;
import com.fasterxml.jackson.core.io.CharacterEscapes;
import com.fasterxml.jackson.core.io.SerializedString;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.dataformat.yaml.YAMLGenerator;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import dev.agentsandbox.policy.text.ShownText;
import java.io.PrintWriter;
import java.time.Duration;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import picocli.CommandLine.Option;

/** {@code -o table|json|yaml} and {@code --no-headers}, and how each prints. */
final class Printer {
  /** Output formats, as {@code -o} takes them. */
  enum Format {
    TABLE,
    JSON,
    YAML
  }

  static final ObjectMapper JSON =
      shown(new ObjectMapper()).enable(SerializationFeature.INDENT_OUTPUT);

  /** One JSON document per line (audit rows), escaped as {@link #JSON} is. */
  static final ObjectMapper JSON_LINE = shown(new ObjectMapper());

  static final YAMLMapper YAML =
      YAMLMapper.builder()
          .disable(YAMLGenerator.Feature.WRITE_DOC_START_MARKER)
          .enable(YAMLGenerator.Feature.MINIMIZE_QUOTES)
          .build();

  @Option(
      names = {"-o", "--output"},
      paramLabel = "FORMAT",
      description = "table (default), json or yaml")
  Format format = Format.TABLE;

  @Option(names = "--no-headers", description = "Leave out the table's header line (for scripts)")
  boolean noHeaders;

  /**
   * JSON the CLI prints escapes what Jackson leaves raw but a terminal would act on or reorder (C1
   * controls, bidirectional and invisible characters) as {@code \\uXXXX}: the same document, so a
   * pipe to {@code jq} reads the same values, and a terminal shows no surprise. C0 controls are
   * escaped by JSON itself.
   */
  private static ObjectMapper shown(ObjectMapper mapper) {
    mapper.getFactory().setCharacterEscapes(new ShownEscapes());
    return mapper;
  }

  private static final class ShownEscapes extends CharacterEscapes {
    private static final long serialVersionUID = 1L;
    private final int[] ascii = standardAsciiEscapesForJSON();

    @Override
    public int[] getEscapeCodesForAscii() {
      return ascii;
    }

    @Override
    public SerializableString getEscapeSequence(int ch) {
      if (Character.isSurrogate((char) ch)) {
        return null; // a pair's halves come one by one; a pair is an ordinary character
      }
      Optional<ShownText.Kind> kind = ShownText.kindOf(ch);
      return kind.isPresent() && ShownText.Rule.TEXT.refuses(kind.get())
          ? new SerializedString(String.format("\\u%04x", ch))
          : null;
    }
  }

  static String json(JsonNode node) throws JsonProcessingException {
    return JSON.writeValueAsString(node);
  }

  static String yaml(JsonNode node) throws JsonProcessingException {
    return YAML.writeValueAsString(node);
  }

  /** Prints {@code document} as JSON or YAML; returns false when the format is a table. */
  boolean document(PrintWriter out, JsonNode document) throws JsonProcessingException {
    switch (format) {
      case JSON -> out.println(json(document));
      case YAML -> out.print(yaml(document));
      case TABLE -> {
        return false;
      }
    }
    out.flush();
    return true;
  }

  /**
   * Prints rows as columns padded to the widest cell, two spaces apart, like kubectl get. A cell's
   * control, bidirectional and invisible characters are written as {@code <U+XXXX>} ({@link
   * TerminalText#line}): a command or a name another user chose must neither drive the reader's
   * terminal nor break the columns.
   */
  void table(PrintWriter out, List<String> headers, List<List<String>> rows) {
    List<List<String>> all = new ArrayList<>();
    if (!noHeaders) {
      all.add(headers);
    }
    for (List<String> row : rows) {
      all.add(row.stream().map(TerminalText::line).toList());
    }
    int[] widths = new int[headers.size()];
    for (List<String> row : all) {
      for (int i = 0; i < row.size(); i++) {
        widths[i] = Math.max(widths[i], row.get(i).length());
      }
    }
    for (List<String> row : all) {
      StringBuilder line = new StringBuilder();
      for (int i = 0; i < row.size(); i++) {
        String cell = row.get(i);
        line.append(cell);
        if (i < row.size() - 1) {
          line.append(" ".repeat(widths[i] - cell.length() + 2));
        }
      }
      out.println(line);
    }
    out.flush();
  }

  /** An age or duration as kubectl writes it: 45s, 3m12s, 5h4m, 2d3h. */
  static String age(Duration duration) {
    long seconds = Math.max(0, duration.toSeconds());
    if (seconds < 60) {
      return seconds + "s";
    }
    if (seconds < 3600) {
      return seconds / 60 + "m" + (seconds % 60 == 0 ? "" : seconds % 60 + "s");
    }
    if (seconds < 86400) {
      return seconds / 3600 + "h" + (seconds % 3600 / 60 == 0 ? "" : seconds % 3600 / 60 + "m");
    }
    return seconds / 86400
        + "d"
        + (seconds % 86400 / 3600 == 0 ? "" : seconds % 86400 / 3600 + "h");
  }

  /** The time between two ISO-8601 fields, or {@code -} when either is missing. */
  static String between(JsonNode from, JsonNode to, Instant now) {
    Instant start = instant(from);
    if (start == null) {
      return "-";
    }
    Instant end = to == null || to.isNull() || to.isMissingNode() ? now : instant(to);
    return end == null ? "-" : age(Duration.between(start, end));
  }

  static Instant instant(JsonNode node) {
    if (node == null || !node.isTextual()) {
      return null;
    }
    try {
      return Instant.parse(node.asText());
    } catch (DateTimeParseException e) {
      return null;
    }
  }

  /** A text field, or {@code -} when missing or null. */
  static String text(JsonNode node) {
    return node == null || node.isNull() || node.isMissingNode() ? "-" : node.asText();
  }
}
