package dev.agentsandbox.proxy;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.agentsandbox.policy.event.DecisionRecord;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Writes each decision as one JSON line, its wire form ({@link DecisionRecord#toTree()}: snake_case
 * fields, {@code "decision": "allow"|"deny"}), and flushes it, so a reader tailing the file sees
 * every decision as soon as it is made.
 *
 * <p>Thread-safe: lines from different event loops never interleave.
 */
public final class JsonLinesDecisionWriter implements DecisionListener, AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(JsonLinesDecisionWriter.class);

  private final OutputStream out;
  private final boolean closeOut;
  private final ObjectMapper mapper;
  private boolean failed;

  /**
   * Writes to {@code out}; closes it on {@link #close()} only when {@code closeOut} (stdout stays
   * open).
   */
  public JsonLinesDecisionWriter(OutputStream out, boolean closeOut) {
    this.out = out;
    this.closeOut = closeOut;
    this.mapper = newMapper();
  }

  /** A mapper that writes plain trees as compact JSON, flushing nothing by itself. */
  private static ObjectMapper newMapper() {
    return new ObjectMapper().disable(SerializationFeature.FLUSH_AFTER_WRITE_VALUE);
  }

  /** Renders one decision as a single JSON line without the newline. */
  public String render(DecisionRecord record) {
    try {
      return mapper.writeValueAsString(record.toTree());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public void onDecision(DecisionRecord record) {
    byte[] line = (render(record) + "\n").getBytes(StandardCharsets.UTF_8);
    synchronized (this) {
      if (failed) {
        return;
      }
      try {
        out.write(line);
        out.flush();
      } catch (IOException e) {
        // One warning, not one per decision: a full disk must not flood the log as well.
        failed = true;
        log.warn("writing decisions failed: {} (further decisions are not written)", e.toString());
      }
    }
  }

  @Override
  public synchronized void close() throws IOException {
    out.flush();
    if (closeOut) {
      out.close();
    }
  }
}
