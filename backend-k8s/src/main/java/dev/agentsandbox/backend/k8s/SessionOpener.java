package dev.agentsandbox.backend.k8s;

import dev.agentsandbox.backend.UnableToLaunchSandboxException;
import dev.agentsandbox.relay.CertificatePin;
import dev.agentsandbox.relay.ReadyLine;
import dev.agentsandbox.relay.RelayChannel;
import dev.agentsandbox.relay.RelayFailure;
import dev.agentsandbox.relay.RelayIdentity;
import dev.agentsandbox.relay.UnpinnedCertificateException;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClientException;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

/**
 * Brings a launched session's pod to its first step: waits for the agent's pod to have an address
 * and for its relay to announce itself on its log's first line (reaching the runner, listening, and
 * the pin of the certificate it will present), connects to the relay presenting this session's
 * certificate and accepting only the announced one, and waits for the runner's greeting. Every
 * failure names what it waited for and where to look.
 */
final class SessionOpener {
  /** How long the TLS connection and its handshake may take. */
  static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(10);

  /** How long the runner's greeting may take once connected. */
  static final Duration GREETING_TIMEOUT = Duration.ofSeconds(30);

  private final KubernetesBackendConfig config;
  private final Clock clock;

  SessionOpener(KubernetesBackendConfig config, Clock clock) {
    this.config = config;
    this.clock = clock;
  }

  /** Where the relay listens and what it presents. */
  record Relay(String podName, String ip, CertificatePin pin) {}

  KubernetesSession open(KubernetesSandbox sandbox, RelayIdentity own) throws InterruptedException {
    Relay relay = awaitRelay(sandbox);
    KubernetesSession session = new KubernetesSession(sandbox);
    RelayChannel channel;
    InetSocketAddress address;
    try {
      address = new InetSocketAddress(InetAddress.getByName(relay.ip()), config.sessions().port());
      channel =
          RelayChannel.connect(
              address, own, relay.pin(), clock, CONNECT_TIMEOUT, session, sandbox.runId());
    } catch (IOException e) {
      throw new UnableToLaunchSandboxException(
          "connecting to the session relay of run "
              + sandbox.runId()
              + " at "
              + relay.ip()
              + ":"
              + config.sessions().port()
              + ": "
              + (unpinned(e)
                  ? "it presented a certificate other than the one its log announced (refused)"
                  : e.getMessage())
              + " (is the control plane's egress to agent-run-* pods on port "
              + config.sessions().port()
              + " open? deploy/k3s/sandbox/agent-sandbox.yaml; docs/backends/k8s.md)");
    }
    session.attach(channel);
    try {
      session.runner().awaitReady(GREETING_TIMEOUT);
    } catch (RuntimeException e) {
      channel.close();
      throw new UnableToLaunchSandboxException(
          "starting the session of run " + sandbox.runId() + ": " + e.getMessage());
    }
    sandbox.decisions().follow();
    return session;
  }

  private static boolean unpinned(Throwable e) {
    for (Throwable cause = e; cause != null; cause = cause.getCause()) {
      if (cause instanceof UnpinnedCertificateException) {
        return true;
      }
    }
    return false;
  }

  /**
   * Waits until the agent's pod has an address and its relay's first log line is a ready line. Only
   * the relay container's log is read: whatever the workload prints is in another's.
   */
  private Relay awaitRelay(KubernetesSandbox sandbox) throws InterruptedException {
    Instant until = clock.instant().plus(config.sessions().readyTimeout());
    String namespace = BundleFactory.namespaceOf(sandbox.runId());
    String waitingFor = "the agent's pod to be created";
    while (true) {
      Optional<Pod> pod;
      try {
        pod = sandbox.agentPod();
      } catch (KubernetesClientException e) {
        throw new UnableToLaunchSandboxException(
            "waiting for the session pod of run " + sandbox.runId() + ": " + Messages.of(e));
      }
      if (pod.isPresent() && pod.get().getStatus() != null) {
        String name = pod.get().getMetadata().getName();
        String phase = pod.get().getStatus().getPhase();
        if ("Failed".equals(phase) || "Succeeded".equals(phase)) {
          throw new UnableToLaunchSandboxException(ended(sandbox, namespace, name, phase));
        }
        String ip = pod.get().getStatus().getPodIP();
        if (ip == null || ip.isBlank()) {
          waitingFor = "pod " + name + " to get an address (phase " + phase + ")";
        } else {
          String log = sandbox.readLog(name, SessionContainers.RELAY, false).orElse("");
          Optional<RelayFailure> failed = RelayFailure.parse(log);
          if (failed.isPresent()) {
            throw new UnableToLaunchSandboxException(
                "starting the session relay of run "
                    + sandbox.runId()
                    + ": it reports "
                    + failed.get().wireName()
                    + (failed.get() == RelayFailure.RUNNER_UNREACHABLE
                        ? " (the step runner never listened: kubectl -n "
                            + namespace
                            + " logs "
                            + name
                            + " -c "
                            + BundleFactory.AGENT_CONTAINER
                            + ")"
                        : " (kubectl -n "
                            + namespace
                            + " logs "
                            + name
                            + " -c "
                            + SessionContainers.RELAY
                            + ")"));
          }
          Optional<CertificatePin> pin = ReadyLine.parse(log);
          if (pin.isPresent()) {
            return new Relay(name, ip, pin.get());
          }
          waitingFor = "the session relay of pod " + name + " to announce itself on its log";
        }
      }
      Duration left = Duration.between(clock.instant(), until);
      if (left.isNegative() || left.isZero()) {
        throw new UnableToLaunchSandboxException(
            "opening the session of run "
                + sandbox.runId()
                + " in namespace "
                + namespace
                + ": still waiting for "
                + waitingFor
                + " after "
                + config.sessions().readyTimeout()
                + " (kubectl -n "
                + namespace
                + " describe pods; is "
                + config.proxyImage()
                + " an image with the relay and the runner, /opt/relay and /opt/step-runner?"
                + " images/build.sh puts them there)");
      }
      Thread.sleep(Math.min(config.pollInterval().toMillis(), Math.max(1, left.toMillis())));
    }
  }

  private static String ended(
      KubernetesSandbox sandbox, String namespace, String pod, String phase) {
    Optional<String> mismatch = sandbox.runtimeMismatch();
    if (mismatch.isPresent()) {
      return "opening the session of run "
          + sandbox.runId()
          + ": the "
          + SandboxPods.RUNTIME_CHECK
          + " init container found that the pod does not run under gVisor, so no step can run: "
          + mismatch.get()
          + " (docs/backends/k8s.md)";
    }
    return "opening the session of run "
        + sandbox.runId()
        + ": pod "
        + pod
        + " ended with phase "
        + phase
        + " before its relay announced itself (kubectl -n "
        + namespace
        + " logs "
        + pod
        + " --all-containers)";
  }
}
