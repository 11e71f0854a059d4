package dev.agentsandbox.server.run;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.agentsandbox.runs.RunOutput;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;

/**
 * Writes a run's or a step's redacted output to a client as it comes: plain text (both streams as
 * one), or one JSON object per line saying which stream each line came from. Lines that left the
 * retained tail before they were read are announced, never lost silently.
 */
final class OutputFollower {
  /** How long a follower waits for new lines before it writes what it has. */
  static final long POLL_MILLIS = 1000;

  private final ObjectMapper mapper;

  OutputFollower(ObjectMapper mapper) {
    this.mapper = mapper;
  }

  /** Follows {@code output} to its end. */
  void follow(RunOutput output, OutputStream out, boolean tagged) throws IOException {
    long seq = 0;
    RunOutput.PlainText plain = new RunOutput.PlainText();
    while (true) {
      RunOutput.Chunk chunk;
      try {
        chunk = output.read(seq, POLL_MILLIS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
      seq = write(chunk, out, tagged, plain);
      out.flush();
      if (chunk.finished()) {
        return;
      }
    }
  }

  /** Writes one chunk's announcement and lines as NDJSON; returns where to read on. */
  long writeTagged(RunOutput.Chunk chunk, OutputStream out) throws IOException {
    return write(chunk, out, true, new RunOutput.PlainText());
  }

  /**
   * Writes one chunk's announcement and lines; returns where to read on. As plain text, {@code
   * plain} (one per follower) keeps the two streams' pieces from running together into one line.
   */
  private long write(
      RunOutput.Chunk chunk, OutputStream out, boolean tagged, RunOutput.PlainText plain)
      throws IOException {
    if (chunk.skippedLines() > 0) {
      out.write(
          tagged
              ? line("skipped_lines", mapper.getNodeFactory().numberNode(chunk.skippedLines()))
              : ("[agent-sandbox: "
                      + chunk.skippedLines()
                      + " lines left the retained tail unread]\n")
                  .getBytes(StandardCharsets.UTF_8));
      plain.interrupted();
    }
    for (RunOutput.Line line : chunk.entries()) {
      out.write(
          tagged
              ? line(
                  line.stderr() ? "stderr" : "stdout",
                  mapper.getNodeFactory().textNode(line.text()))
              : plain.next(line).getBytes(StandardCharsets.UTF_8));
    }
    return chunk.nextSeq();
  }

  /** One NDJSON line {@code {FIELD: VALUE}}, with its newline. */
  byte[] line(String field, JsonNode value) throws IOException {
    ObjectNode line = mapper.createObjectNode();
    line.set(field, value);
    byte[] json = mapper.writeValueAsBytes(line);
    byte[] withNewline = java.util.Arrays.copyOf(json, json.length + 1);
    withNewline[json.length] = '\n';
    return withNewline;
  }
}
