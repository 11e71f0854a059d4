package dev.agentsandbox.backend.k8s;

import dev.agentsandbox.backend.RunSpec;
import io.fabric8.kubernetes.api.model.ContainerBuilder;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.IntOrString;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.PodSpecBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.ResourceRequirements;
import io.fabric8.kubernetes.api.model.ResourceRequirementsBuilder;
import io.fabric8.kubernetes.api.model.SecurityContext;
import io.fabric8.kubernetes.api.model.SecurityContextBuilder;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeBuilder;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.fabric8.kubernetes.api.model.VolumeMountBuilder;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * The two pod specs of a sandbox, hardened alike: non-root, no privilege escalation, no
 * capabilities, RuntimeDefault seccomp, read-only root, no service account token, no service links.
 */
final class SandboxPods {
  /** The variable the proxy image's launcher reads the policy document from. */
  static final String POLICY_ENV = "AGENT_SANDBOX_PROXY_POLICY";

  /** The agent pod's init container that proves gVisor before the agent's command runs. */
  static final String RUNTIME_CHECK = "runtime-check";

  /** The runtime check's exit status when the pod's kernel is not gVisor's. */
  static final int RUNTIME_MISMATCH_EXIT = 86;

  /**
   * The runtime check. gVisor's kernel keeps its own log, which it starts with the line "Starting
   * gVisor..." and serves to any user through syslog(2); a Linux kernel's log never starts so, and
   * under runc an unprivileged container cannot read the host's log at all (dmesg_restrict). So the
   * check fails closed: no log, or any other first line, is a mismatch. It runs in the proxy's
   * image (busybox), which the nodes already pull, so the agent's image needs no shell.
   */
  static final String RUNTIME_CHECK_SCRIPT =
      "first=\"$(dmesg 2>/dev/null | head -n 1)\"\n"
          + "case \"$first\" in\n"
          + "  *'Starting gVisor'*) echo 'agent-sandbox runtime check: gVisor'; exit 0 ;;\n"
          + "esac\n"
          + "echo \"agent-sandbox runtime check: this pod does not run under gVisor (its kernel log"
          + " does not start with gVisor's banner; kernel $(uname -r)); the RuntimeClass's handler"
          + " does not lead to runsc on this node\" >&2\n"
          + "exit "
          + RUNTIME_MISMATCH_EXIT
          + "\n";

  private static final long NON_ROOT_UID = 65532L;

  // At most the agent's own minimum (0.1 CPU, 64 MiB), so the pod's quota is the agent's.
  private static final long RUNTIME_CHECK_CPU_MILLIS = 100;
  private static final int RUNTIME_CHECK_MEMORY_MB = 64;

  private final KubernetesBackendConfig config;

  SandboxPods(KubernetesBackendConfig config) {
    this.config = config;
  }

  /**
   * The proxy's pod. The proxy image's launcher ({@code images/build.sh}) takes the policy document
   * from {@link #POLICY_ENV}, writes it to its {@code /tmp} and starts the proxy with {@code
   * --policy} on it; the document comes from the run's ConfigMap, so nothing is passed as arguments
   * and no file is mounted.
   */
  PodSpec proxy(Optional<String> runtimeClass) {
    SandboxQuota q = config.quota();
    return hardenedPod(runtimeClass)
        .withRestartPolicy("Never")
        .withVolumes(scratch("tmp"))
        .addNewContainer()
        .withName(BundleFactory.PROXY_CONTAINER)
        .withImage(config.proxyImage())
        .addNewEnv()
        .withName(POLICY_ENV)
        .withNewValueFrom()
        .withNewConfigMapKeyRef()
        .withName(BundleFactory.POLICY_CONFIG_MAP)
        .withKey(BundleFactory.POLICY_FILE)
        .withOptional(false)
        .endConfigMapKeyRef()
        .endValueFrom()
        .endEnv()
        .addNewPort()
        .withName("proxy")
        .withContainerPort(config.proxyPort())
        .withProtocol("TCP")
        .endPort()
        .withNewReadinessProbe()
        .withNewTcpSocket()
        .withPort(new IntOrString(config.proxyPort()))
        .endTcpSocket()
        .withPeriodSeconds(2)
        .endReadinessProbe()
        .withResources(resources(q.proxyCpuMillis(), q.proxyMemoryMb()))
        .withSecurityContext(hardenedContainer())
        .withVolumeMounts(mount("tmp", "/tmp", false))
        .endContainer()
        .build();
  }

  /** The agent's pod: the run's command with the proxy's address in the proxy variables. */
  PodSpec agent(RunSpec spec, Optional<String> runtimeClass, Optional<String> ip) {
    String proxyUrl =
        "http://" + ip.orElse(BundleFactory.PROXY_IP_AT_LAUNCH) + ":" + config.proxyPort();
    Map<String, String> env = new TreeMap<>(spec.env());
    for (String key : List.of("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")) {
      env.put(key, proxyUrl);
    }
    List<EnvVar> envVars =
        env.entrySet().stream().map(e -> new EnvVar(e.getKey(), e.getValue(), null)).toList();
    PodSpecBuilder pod =
        hardenedPod(runtimeClass)
            .withRestartPolicy("Never")
            .withVolumes(scratch("tmp"), scratch("workspace"));
    if (runtimeClass.isPresent()) {
      // Under gVisor, the pod proves it before the agent's command runs; a failure fails the Job.
      pod.addToInitContainers(
          new ContainerBuilder()
              .withName(RUNTIME_CHECK)
              .withImage(config.proxyImage())
              .withCommand("/bin/sh", "-c", RUNTIME_CHECK_SCRIPT)
              .withTerminationMessagePolicy("FallbackToLogsOnError")
              .withResources(resources(RUNTIME_CHECK_CPU_MILLIS, RUNTIME_CHECK_MEMORY_MB))
              .withSecurityContext(hardenedContainer())
              .build());
    }
    return pod.addToContainers(
            new ContainerBuilder()
                .withName(BundleFactory.AGENT_CONTAINER)
                .withImage(spec.image())
                .withCommand(spec.command())
                .withEnv(envVars)
                .withWorkingDir("/workspace")
                .withResources(
                    resources(BundleFactory.agentCpuMillis(spec), spec.resources().memoryMb()))
                .withSecurityContext(hardenedContainer())
                .withVolumeMounts(
                    mount("tmp", "/tmp", false), mount("workspace", "/workspace", false))
                .build())
        .build();
  }

  private PodSpecBuilder hardenedPod(Optional<String> runtimeClass) {
    return new PodSpecBuilder()
        .withServiceAccountName(BundleFactory.SERVICE_ACCOUNT)
        .withAutomountServiceAccountToken(false)
        .withEnableServiceLinks(false)
        .withHostNetwork(false)
        .withHostPID(false)
        .withHostIPC(false)
        .withRuntimeClassName(runtimeClass.orElse(null))
        .withNewSecurityContext()
        .withRunAsNonRoot(true)
        .withRunAsUser(NON_ROOT_UID)
        .withRunAsGroup(NON_ROOT_UID)
        .withFsGroup(NON_ROOT_UID)
        .withNewSeccompProfile()
        .withType("RuntimeDefault")
        .endSeccompProfile()
        .endSecurityContext();
  }

  private static SecurityContext hardenedContainer() {
    return new SecurityContextBuilder()
        .withPrivileged(false)
        .withAllowPrivilegeEscalation(false)
        .withRunAsNonRoot(true)
        .withReadOnlyRootFilesystem(true)
        .withNewCapabilities()
        .withDrop("ALL")
        .endCapabilities()
        .withNewSeccompProfile()
        .withType("RuntimeDefault")
        .endSeccompProfile()
        .build();
  }

  private ResourceRequirements resources(long cpuMillis, long memoryMb) {
    // Requests equal limits: the pod is Guaranteed and cannot borrow beyond its caps.
    Map<String, Quantity> caps =
        Map.of(
            "cpu", new Quantity(cpuMillis + "m"),
            "memory", new Quantity(memoryMb + "Mi"),
            "ephemeral-storage", new Quantity(config.quota().ephemeralStorageMb() + "Mi"));
    return new ResourceRequirementsBuilder().withLimits(caps).withRequests(caps).build();
  }

  private Volume scratch(String name) {
    return new VolumeBuilder()
        .withName(name)
        .withNewEmptyDir()
        .withSizeLimit(new Quantity(config.quota().ephemeralStorageMb() + "Mi"))
        .endEmptyDir()
        .build();
  }

  private static VolumeMount mount(String name, String path, boolean readOnly) {
    return new VolumeMountBuilder()
        .withName(name)
        .withMountPath(path)
        .withReadOnly(readOnly)
        .build();
  }
}
