package dev.agentsandbox.proxy;

import io.netty.channel.Channel;

/**
 * One direction of a relay, and the one place where a relayed channel's reading is switched: the
 * source reads only while its owner wants input ({@link #want}) and the sink it feeds is open and
 * writable (below its high-water mark). Used by the CONNECT tunnel for both directions and by the
 * plain-HTTP forwarder for the request body (client to upstream) and the response (upstream to
 * client), so a fast sender never makes the proxy buffer without bound.
 *
 * <p>No stall window: reading is never set from a stale observation. Every change (a write, a
 * flush, the sink's writability event, the owner's wish) recomputes it from the current state, so a
 * writability event fired inside {@code flush()} (both channels share one event loop, so a flush
 * can drain the sink at once) cannot be undone by a decision taken before the flush — the bug fixed
 * in 5c8605c, where reading was turned off after such a flush had turned it back on.
 *
 * <p>Confined to the event loop both channels share.
 */
final class Flow {
  private final Channel source;
  private Channel sink;
  private boolean wanted;

  /** A flow out of {@code source} into {@code sink} (or none yet); no input is wanted yet. */
  Flow(Channel source, Channel sink) {
    this.source = source;
    this.sink = sink;
  }

  /** The channel the source's messages go to; null when none is attached. */
  Channel sink() {
    return sink;
  }

  /**
   * Attaches the sink the source's messages go to, or detaches it ({@code null}): without a sink
   * the source reads whenever input is wanted (a keep-alive client waiting for its next request).
   */
  void feed(Channel next) {
    this.sink = next;
    update();
  }

  /**
   * Whether the owner wants to read the source at all (the sink's writability decides the rest).
   */
  void want(boolean input) {
    this.wanted = input;
    update();
  }

  /**
   * Writes one message to the sink. Flushes early when the sink has passed its high-water mark
   * (reading is already paused by then); otherwise the owner flushes once per read burst.
   */
  void forward(Object message) {
    sink.write(message, sink.voidPromise());
    if (!sink.isWritable()) {
      sink.flush();
    }
    update();
  }

  /** Flushes what was forwarded (at the end of a read burst). */
  void flush() {
    if (sink != null) {
      sink.flush();
      update();
    }
  }

  /** Called from the sink's pipeline when its writability changed. */
  void sinkWritabilityChanged() {
    update();
  }

  /** Whether the source is reading now (for tests and assertions). */
  boolean reading() {
    return source.config().isAutoRead();
  }

  private void update() {
    boolean read = wanted && (sink == null || (sink.isActive() && sink.isWritable()));
    if (source.config().isAutoRead() != read) {
      source.config().setAutoRead(read);
    }
  }
}
