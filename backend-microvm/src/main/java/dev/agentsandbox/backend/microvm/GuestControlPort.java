package dev.agentsandbox.backend.microvm;

import java.nio.charset.StandardCharsets;

/**
 * What the guest's control port carries: for a run, the host's one {@code stop} line; for a
 * session, the step runner's frames both ways ({@link MicroVmSession}).
 */
interface GuestControlPort {
  /** Bytes the guest wrote to the port, in order, from the channel's one thread. */
  void received(byte[] chunk);

  /** The port's stream ended (the VMM exited, or teardown closed it). */
  void ended();

  /** Asks the guest to stop its workload; returns whether the request was sent. */
  boolean askToStop(GuestChannel channel);

  /** A run's control port: it only ever sends {@code stop}. */
  GuestControlPort ONE_SHOT =
      new GuestControlPort() {
        @Override
        public void received(byte[] chunk) {}

        @Override
        public void ended() {}

        @Override
        public boolean askToStop(GuestChannel channel) {
          return channel.send("stop\n".getBytes(StandardCharsets.US_ASCII));
        }
      };
}
