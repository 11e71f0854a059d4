package dev.agentsandbox.relay;

import dev.agentsandbox.steprunner.RunnerClient;
import java.net.InetSocketAddress;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/** The step runner's client over a relay channel, as the Kubernetes backend wires them. */
final class RunnerSession implements AutoCloseable {
  final RelayChannel channel;
  final RunnerClient client;
  final List<String> violations;
  final List<String> ended;

  private RunnerSession(
      RelayChannel channel, RunnerClient client, List<String> violations, List<String> ended) {
    this.channel = channel;
    this.client = client;
    this.violations = violations;
    this.ended = ended;
  }

  static RunnerSession open(InetSocketAddress address, RelayIdentity own, CertificatePin relay)
      throws Exception {
    List<String> violations = new CopyOnWriteArrayList<>();
    List<String> ended = new CopyOnWriteArrayList<>();
    RelayChannel[] holder = new RelayChannel[1];
    RunnerClient client =
        new RunnerClient("run r1", frame -> holder[0].write(frame), violations::add);
    holder[0] =
        RelayChannel.connect(
            address,
            own,
            relay,
            Clock.systemUTC(),
            Duration.ofSeconds(10),
            new RelayChannel.Receiver() {
              @Override
              public void receive(byte[] bytes, int offset, int length) {
                client.receive(bytes, offset, length);
              }

              @Override
              public void ended(String why) {
                ended.add(why);
                client.ended();
              }
            },
            "r1");
    client.awaitReady(Duration.ofSeconds(30));
    return new RunnerSession(holder[0], client, violations, ended);
  }

  @Override
  public void close() {
    client.bye();
    channel.close();
  }
}
