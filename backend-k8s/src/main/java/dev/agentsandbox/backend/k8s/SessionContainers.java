package dev.agentsandbox.backend.k8s;

import dev.agentsandbox.backend.RunContract;
import dev.agentsandbox.backend.RunSpec;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerBuilder;
import io.fabric8.kubernetes.api.model.EnvVarBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.SecurityContext;
import io.fabric8.kubernetes.api.model.SecurityContextBuilder;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeBuilder;
import io.fabric8.kubernetes.api.model.VolumeMount;
import java.util.List;

/**
 * What a session's agent pod has that a run's has not (docs/backends/k8s.md, "Sessions"): the step
 * runner copied from the proxy image onto a volume by an init container and run as the agent's
 * container's only process, listening on the pod's loopback for one connection; and the native
 * sidecar {@value #RELAY}, also from the proxy image, under a uid of its own, that terminates the
 * control plane's mutual TLS on the pod's address and relays to the runner. Neither key is in the
 * pod's spec: the relay makes its own; the control plane's is named by its pin only.
 */
final class SessionContainers {
  /** The init container that copies the runner out of the proxy image. */
  static final String RUNNER_COPY = "step-runner";

  /** The native sidecar that terminates TLS and relays to the runner. */
  static final String RELAY = "session-relay";

  /** The memory-backed volume the runner is copied onto; the agent mounts it read-only. */
  static final String RUNNER_VOLUME = "step-runner";

  /** The relay's own memory-backed scratch folder (the JVM's /tmp). */
  static final String RELAY_SCRATCH_VOLUME = "relay-tmp";

  /** Where the agent's container finds the runner. */
  static final String RUNNER_DIR = "/run/agent-sandbox/step-runner";

  /** The runner in the proxy image (images/build.sh). */
  static final String RUNNER_IN_IMAGE = "/opt/step-runner/asb-step-runner";

  /** The relay's launcher in the proxy image (images/build.sh). */
  static final String RELAY_IN_IMAGE = "/opt/relay/start";

  /** The relay's variable for the pod's address, from the downward API. */
  static final String POD_IP_ENV = "AGENT_SANDBOX_POD_IP";

  /**
   * The relay's uid: not the workload's, so that a step (which runs as 65532) can neither signal
   * it, nor read its process's memory or files, nor share its port by {@code SO_REUSEPORT}.
   */
  static final long RELAY_UID = 65533L;

  // The relay: a small JVM (its heap capped by its launcher) relaying one connection.
  static final long RELAY_CPU_MILLIS = 250;
  static final int RELAY_MEMORY_MB = 96;
  static final int RELAY_STORAGE_MB = 16;
  private static final int RUNNER_VOLUME_MB = 8;
  private static final int RELAY_SCRATCH_MB = 8;
  private static final long RUNNER_COPY_CPU_MILLIS = 100;
  private static final int RUNNER_COPY_MEMORY_MB = 64;

  private final KubernetesBackendConfig config;

  SessionContainers(KubernetesBackendConfig config) {
    this.config = config;
  }

  /** The agent container's command: the runner, its one connection on the pod's loopback. */
  List<String> agentCommand() {
    return List.of(
        RUNNER_DIR + "/asb-step-runner",
        "--workspace",
        RunContract.WORKSPACE,
        "--listen",
        "127.0.0.1:" + config.sessions().runnerPort());
  }

  /** The agent container's mount of the runner, read-only: a step cannot replace it. */
  VolumeMount agentMount() {
    return SandboxPods.mount(RUNNER_VOLUME, RUNNER_DIR, true);
  }

  List<Volume> volumes() {
    return List.of(
        memory(RUNNER_VOLUME, RUNNER_VOLUME_MB), memory(RELAY_SCRATCH_VOLUME, RELAY_SCRATCH_MB));
  }

  /**
   * Copies the static runner out of the proxy image (which the nodes already pull), so the agent's
   * image needs nothing: not a shell, not a libc.
   */
  Container runnerCopy() {
    return new ContainerBuilder()
        .withName(RUNNER_COPY)
        .withImage(config.proxyImage())
        .withCommand("/bin/cp", RUNNER_IN_IMAGE, RUNNER_DIR + "/asb-step-runner")
        .withTerminationMessagePolicy("FallbackToLogsOnError")
        .withResources(
            SandboxPods.resources(
                RUNNER_COPY_CPU_MILLIS, RUNNER_COPY_MEMORY_MB, config.quota().ephemeralStorageMb()))
        .withSecurityContext(SandboxPods.hardenedContainer())
        .withVolumeMounts(SandboxPods.mount(RUNNER_VOLUME, RUNNER_DIR, false))
        .build();
  }

  /**
   * The relay: a native sidecar, so it starts before the agent's container and is stopped after it.
   * It listens on the pod's own address (expanded by the kubelet from {@link #POD_IP_ENV}) and
   * mounts nothing of the agent's: not the workspace, not the credentials.
   */
  Container relay(RunSpec spec, SessionWiring wiring) {
    return new ContainerBuilder()
        .withName(RELAY)
        .withImage(config.proxyImage())
        .withRestartPolicy("Always")
        .withCommand(
            RELAY_IN_IMAGE,
            "--listen-address",
            "$(" + POD_IP_ENV + ")",
            "--listen-port",
            Integer.toString(config.sessions().port()),
            "--runner-port",
            Integer.toString(config.sessions().runnerPort()),
            "--client-sha256",
            wiring.clientPin(),
            "--run-id",
            spec.runId(),
            "--expires-at",
            Long.toString(spec.expiresAt().getEpochSecond()))
        .withEnv(
            new EnvVarBuilder()
                .withName(POD_IP_ENV)
                .withNewValueFrom()
                .withNewFieldRef()
                .withFieldPath("status.podIP")
                .endFieldRef()
                .endValueFrom()
                .build())
        .addNewPort()
        .withName("session")
        .withContainerPort(config.sessions().port())
        .withProtocol("TCP")
        .endPort()
        .withResources(SandboxPods.resources(RELAY_CPU_MILLIS, RELAY_MEMORY_MB, RELAY_STORAGE_MB))
        .withSecurityContext(relaySecurity())
        .withVolumeMounts(SandboxPods.mount(RELAY_SCRATCH_VOLUME, "/tmp", false))
        .build();
  }

  /** Hardened as every container, under the relay's own uid and gid. */
  private static SecurityContext relaySecurity() {
    return new SecurityContextBuilder(SandboxPods.hardenedContainer())
        .withRunAsUser(RELAY_UID)
        .withRunAsGroup(RELAY_UID)
        .build();
  }

  private static Volume memory(String name, int mb) {
    return new VolumeBuilder()
        .withName(name)
        .withNewEmptyDir()
        .withMedium("Memory")
        .withSizeLimit(new Quantity(mb + "Mi"))
        .endEmptyDir()
        .build();
  }
}
