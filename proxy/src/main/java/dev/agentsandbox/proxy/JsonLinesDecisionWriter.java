package dev.agentsandbox.proxy;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.module.SimpleModule;
import com.fasterxml.jackson.databind.ser.std.StdSerializer;
import dev.agentsandbox.policy.net.Reason;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Writes each decision as one JSON line (snake_case fields, {@code "decision": "allow"|"deny"}) and
 * flushes it, so a reader tailing the file sees every decision as soon as it is made.
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

  /** The mapper that renders a {@link DecisionRecord} as the documented JSON object. */
  public static ObjectMapper newMapper() {
    SimpleModule module = new SimpleModule("decisions");
    module.addSerializer(new ToStringSerializer<>(Instant.class));
    module.addSerializer(
        new StdSerializer<Reason>(Reason.class) {
          private static final long serialVersionUID = 1L;

          @Override
          public void serialize(
              Reason value, JsonGenerator gen, com.fasterxml.jackson.databind.SerializerProvider p)
              throws IOException {
            gen.writeString(value.wireName());
          }
        });
    return new ObjectMapper()
        .registerModule(module)
        .disable(SerializationFeature.FLUSH_AFTER_WRITE_VALUE);
  }

  /** Renders one decision as a single JSON line without the newline. */
  public String render(DecisionRecord record) {
    try {
      return mapper.writeValueAsString(record);
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

  private static final class ToStringSerializer<T> extends StdSerializer<T> {
    private static final long serialVersionUID = 1L;

    ToStringSerializer(Class<T> type) {
      super(type);
    }

    @Override
    public void serialize(
        T value, JsonGenerator gen, com.fasterxml.jackson.databind.SerializerProvider p)
        throws IOException {
      gen.writeString(value.toString());
    }
  }
}
