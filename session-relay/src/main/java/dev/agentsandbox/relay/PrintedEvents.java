package dev.agentsandbox.relay;

import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.util.EnumMap;
import java.util.Map;

/**
 * The relay's log: one line per event on its standard output, fixed words and closed reasons only,
 * so nothing a peer sends is ever written there. The ready line comes first ({@link ReadyLine}).
 * Refusals are counted, and written for the first {@value #WRITTEN} of each reason and every
 * {@value #EVERY}th after, so a peer that knocks all day cannot fill the log. Thread-safe.
 */
final class PrintedEvents implements SessionRelay.Events {
  static final int WRITTEN = 20;
  static final int EVERY = 1000;

  private final PrintStream out;
  private final Map<RelayRefusal, Long> refused = new EnumMap<>(RelayRefusal.class);

  PrintedEvents(PrintStream out) {
    this.out = out;
  }

  @Override
  public synchronized void ready(CertificatePin pin, InetSocketAddress address) {
    out.println(ReadyLine.format(pin));
    out.println("agent-sandbox-relay listening on port " + address.getPort());
    out.flush();
  }

  @Override
  public synchronized void refused(RelayRefusal refusal) {
    long count = refused.merge(refusal, 1L, Long::sum);
    if (count <= WRITTEN || count % EVERY == 0) {
      out.println("agent-sandbox-relay refused " + refusal.wireName() + " (" + count + " so far)");
      out.flush();
    }
  }

  @Override
  public synchronized void started() {
    out.println("agent-sandbox-relay session started");
    out.flush();
  }

  @Override
  public synchronized void ended(RelayEnd end) {
    out.println("agent-sandbox-relay session ended " + end.wireName());
    out.flush();
  }

  synchronized void failed(RelayFailure failure) {
    out.println(RelayFailure.PREFIX + failure.wireName());
    out.flush();
  }
}
