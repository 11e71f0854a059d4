package dev.agentsandbox.relay;

import java.time.Clock;

/**
 * The session relay's process: the native sidecar {@code session-relay} of a Kubernetes session's
 * agent pod, started from the proxy image as {@code /opt/relay/start OPTIONS} ({@link
 * RelayOptions#USAGE}). It makes its key pair, reaches the runner, prints its ready line and serves
 * the one session. It never exits by itself after starting: the kubelet would restart a native
 * sidecar that exits, and a second relay must never be the session's (the pod ends when the runner
 * does, and the kubelet stops the relay then).
 */
public final class RelayMain {
  private RelayMain() {}

  public static void main(String[] args) throws InterruptedException {
    if (args.length == 1 && args[0].equals("--help")) {
      System.out.println(RelayOptions.USAGE);
      return;
    }
    RelayOptions options;
    try {
      options = RelayOptions.parse(args);
    } catch (IllegalArgumentException e) {
      System.err.println("agent-sandbox-relay: " + e.getMessage() + "\n" + RelayOptions.USAGE);
      System.exit(64);
      return;
    }
    Clock clock = Clock.systemUTC();
    RelayIdentity identity =
        RelayIdentity.generate(
            RelayIdentity.Role.RELAY, options.runId(), clock.instant(), options.expiresAt());
    PrintedEvents events = new PrintedEvents(System.out);
    SessionRelay relay = new SessionRelay(options, identity, events, clock);
    try {
      relay.start();
    } catch (SessionRelay.UnableToStartRelayException e) {
      events.failed(e.failure());
      System.err.println("agent-sandbox-relay: " + e.getMessage());
      idle();
      return;
    }
    relay.serve();
  }

  /** Waits to be stopped, so that a relay that failed is not restarted into a second try. */
  private static void idle() throws InterruptedException {
    while (true) {
      Thread.sleep(60_000);
    }
  }
}
