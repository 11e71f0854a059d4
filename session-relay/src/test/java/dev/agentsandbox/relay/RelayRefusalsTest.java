package dev.agentsandbox.relay;

import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.backend.session.StepEnd;
import dev.agentsandbox.backend.session.StepSpec;
import dev.agentsandbox.backend.session.WorkspacePath;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Who may not reach the runner through the relay, as a table of named attempts against one real
 * relay and runner on loopback: each sends a step that would leave a file behind, each must be
 * refused for its own reason before a byte reaches the runner, and afterwards the session's own
 * control plane still gets in; and then nobody else, not even with the control plane's own key.
 */
class RelayRefusalsTest {
  /** One way in that must fail. */
  interface Attempt {
    boolean run(LocalRelay pod, byte[] frames) throws Exception;
  }

  record Row(String name, Attempt attempt, RelayRefusal refusal) {}

  static List<Row> rows() {
    return List.of(
        new Row(
            "the runner's frames in plain text",
            (pod, frames) -> Attacker.tryPlain(pod.address(), frames),
            RelayRefusal.NOT_TLS),
        new Row(
            "an HTTP request",
            (pod, frames) ->
                Attacker.tryPlain(
                    pod.address(),
                    "GET / HTTP/1.1\r\nHost: x\r\n\r\n"
                        .getBytes(java.nio.charset.StandardCharsets.US_ASCII)),
            RelayRefusal.NOT_TLS),
        new Row(
            "TLS 1.3 without a client certificate",
            (pod, frames) ->
                Attacker.tryWith(
                    Attacker.context("TLSv1.3", null, null, pod.relayPin),
                    "TLSv1.3",
                    pod.address(),
                    frames),
            RelayRefusal.NO_CLIENT_CERTIFICATE),
        new Row(
            "a self-signed certificate of another key, named as the control plane",
            (pod, frames) -> {
              RelayIdentity other =
                  RelayIdentity.generate(
                      RelayIdentity.Role.CONTROL_PLANE,
                      "r1",
                      Instant.now(),
                      Instant.now().plusSeconds(3600));
              return Attacker.tryWith(
                  Attacker.context(
                      "TLSv1.3",
                      other.keys(),
                      new java.security.cert.X509Certificate[] {other.certificate()},
                      pod.relayPin),
                  "TLSv1.3",
                  pod.address(),
                  frames);
            },
            RelayRefusal.CERTIFICATE_NOT_PINNED),
        new Row(
            "a certificate a CA signed for the control plane's name, with its CA",
            (pod, frames) -> {
              TestCa ca = new TestCa("agent-sandbox test CA");
              TestCa.Leaf leaf = ca.issue("agent-sandbox control plane r1", Instant.now());
              return Attacker.tryWith(
                  Attacker.context("TLSv1.3", leaf.keys(), leaf.chain(), pod.relayPin),
                  "TLSv1.3",
                  pod.address(),
                  frames);
            },
            RelayRefusal.CERTIFICATE_NOT_PINNED),
        new Row(
            "TLS 1.2 only",
            (pod, frames) ->
                Attacker.tryWith(
                    Attacker.context("TLSv1.2", null, null, pod.relayPin),
                    "TLSv1.2",
                    pod.address(),
                    frames),
            RelayRefusal.PROTOCOL_VERSION),
        new Row(
            "a handshake record, then silence",
            (pod, frames) -> {
              try (Socket socket = new Socket()) {
                socket.connect(pod.address(), 5000);
                socket.setSoTimeout(20_000);
                OutputStream out = socket.getOutputStream();
                out.write(new byte[] {0x16, 0x03, 0x01});
                out.flush();
                return socket.getInputStream().read() >= 0;
              }
            },
            RelayRefusal.HANDSHAKE_TIMEOUT));
  }

  @Test
  void nobodyButTheSessionsControlPlaneReachesTheRunner(@TempDir Path dir) throws Exception {
    try (LocalRelay pod = LocalRelay.start(dir)) {
      List<Row> rows = rows();
      for (int i = 0; i < rows.size(); i++) {
        Row row = rows.get(i);
        String marker = "marker-" + i;
        byte[] frames = Frames.exec(1, List.of("touch", marker));
        boolean answered = row.attempt().run(pod, frames);
        assertThat(answered).as(row.name() + ": the relay answered nothing").isFalse();
        pod.awaitLog("agent-sandbox-relay refused " + row.refusal().wireName());
        assertThat(pod.log)
            .as(row.name())
            .filteredOn(l -> l.startsWith("agent-sandbox-relay refused"))
            .hasSize(i + 1)
            .last()
            .asString()
            .startsWith("agent-sandbox-relay refused " + row.refusal().wireName() + " ");
        assertThat(pod.workspace.resolve(marker)).as(row.name()).doesNotExist();
      }
      assertThat(pod.log).noneMatch(l -> l.contains("session started"));

      // The session's own control plane: in, and its step runs.
      try (RunnerSession session = pod.connect()) {
        StepEnd end =
            session
                .client
                .exec(
                    new StepSpec(1, List.of("touch", "mine"), Map.of(), WorkspacePath.root(), null),
                    new Recording())
                .awaitEnd(Instant.now().plusSeconds(30))
                .orElseThrow();
        assertThat(end.exitStatus()).hasValue(0);
        assertThat(pod.workspace.resolve("mine")).exists();

        // One session, once: a second connection is closed unread, even one holding the
        // control plane's own key (a copy of it would be no use either).
        assertThat(
                Attacker.tryWith(
                    Attacker.context(
                        "TLSv1.3",
                        pod.client.keys(),
                        new java.security.cert.X509Certificate[] {pod.client.certificate()},
                        pod.relayPin),
                    "TLSv1.3",
                    pod.address(),
                    Frames.exec(1, List.of("touch", "second"))))
            .isFalse();
        pod.awaitLog("agent-sandbox-relay refused session-taken");
        assertThat(pod.workspace.resolve("second")).doesNotExist();
        // The session goes on.
        assertThat(
                session
                    .client
                    .exec(
                        new StepSpec(2, List.of("true"), Map.of(), WorkspacePath.root(), null),
                        new Recording())
                    .awaitEnd(Instant.now().plusSeconds(30))
                    .orElseThrow()
                    .exitStatus())
            .hasValue(0);
      }
      assertThat(Files.list(pod.workspace).map(p -> p.getFileName().toString()))
          .containsExactly("mine");
    }
  }
}
