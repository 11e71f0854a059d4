package dev.agentsandbox.backend.k8s;

import dev.agentsandbox.backend.RunContract;
import dev.agentsandbox.backend.RunCredential;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.backend.RunTrust;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerBuilder;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.EnvVarBuilder;
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
import java.util.ArrayList;
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

  /** The agent pod's init container that puts the run's credentials on the workload's tmpfs. */
  static final String CREDENTIALS_COPY = "credentials";

  /** The agent pod's volume of the run's Secret, mounted by {@link #CREDENTIALS_COPY} only. */
  static final String CREDENTIALS_SECRET_VOLUME = "credentials-secret";

  /** The agent pod's memory-backed volume the workload reads its credentials from. */
  static final String CREDENTIALS_VOLUME = "credentials";

  /** Where {@link #CREDENTIALS_COPY} reads the Secret's files. */
  static final String CREDENTIALS_SECRET_MOUNT = "/run/agent-sandbox/secret";

  /**
   * The Secret volume's file mode, 0440: the kubelet writes Secret files as root and, with an
   * fsGroup, chowns them to that group and adds group read (pkg/volume/volume_linux.go); a Secret
   * volume's files are never owned by the pod's runAsUser (only projected service account tokens
   * are). So the workload could get 0440 root:65532 at best, not the 0400 file of its own uid the
   * run contract promises; {@link #CREDENTIALS_COPY} makes that file instead.
   */
  static final int CREDENTIALS_SECRET_MODE = 0440;

  /**
   * Copies the credentials named in its arguments. Run as the workload's uid, with umask 0377, so
   * each file it creates is mode 0400 and owned by that uid; its group is the fsGroup, which the
   * kubelet set on the folder with the set-group-id bit. Names are plain file names ({@link
   * RunCredential}) passed as arguments, never spliced into the script. {@code cat} follows the
   * Secret volume's {@code ..data} links and writes plain files.
   */
  static final String CREDENTIALS_COPY_SCRIPT =
      "set -eu\n"
          + "umask 0377\n"
          + "for name in \"$@\"; do\n"
          + "  cat \""
          + CREDENTIALS_SECRET_MOUNT
          + "/$name\" > \""
          + RunContract.CREDENTIALS_DIR
          + "/$name\"\n"
          + "done\n";

  /**
   * The agent pod's native sidecar (an init container with {@code restartPolicy: Always}) that
   * hands the run's outputs back: it shares only the {@link #OUT_VOLUME} with the agent and, when
   * the kubelet stops it (after the agent's container has ended, which is when Kubernetes stops a
   * pod's sidecars, whether the agent exited, its Job was deleted or its deadline passed), writes
   * {@code out/} as a framed tar stream to its log ({@link OutputFrame}). The control plane reads
   * that log with {@code get pods/log}: no exec, attach or port-forward is needed.
   */
  static final String COLLECT = "collect";

  /** The agent pod's volume mounted at {@link RunContract#OUT_DIR}: the agent's outputs. */
  static final String OUT_VOLUME = "out";

  /** The sidecar's own memory-backed scratch folder: its pipes and the stream's sum and length. */
  static final String COLLECT_SCRATCH_VOLUME = "collect-tmp";

  /**
   * The sidecar's script, run by the proxy image's busybox as {@code sh -c SCRIPT sh PARENT
   * SCRATCH} ({@code /workspace} and {@code /tmp}). It idles until SIGTERM, then writes {@value
   * OutputFrame#BEGIN}, the base64 lines of {@code tar -c out} (links archived as links, never
   * followed; the collector refuses them), and an end line with the tar's byte count and SHA-256,
   * counted by {@code wc} and {@code sha256sum} from the same bytes through two pipes; tar's
   * complaints go to a file, so nothing else reaches the log. The agent's own log is a different
   * container's: whatever the workload prints cannot enter this stream.
   */
  static final String COLLECT_SCRIPT =
      "set -u\n"
          + "emit() {\n"
          + "  trap '' TERM INT\n"
          + "  cd \"$2\" || exit 70\n"
          + "  rm -f h c sum len err\n"
          + "  mkfifo h c || exit 71\n"
          + "  sha256sum <h >sum &\n"
          + "  hp=$!\n"
          + "  wc -c <c >len &\n"
          + "  cp=$!\n"
          + "  echo '"
          + OutputFrame.BEGIN
          + "'\n"
          + "  tar -cf - -C \"$1\" out 2>err | tee h c | base64\n"
          + "  wait $hp $cp\n"
          + "  echo \""
          + OutputFrame.END
          + " $(tr -dc 0-9 <len) $(cut -c1-64 sum)\"\n"
          + "  exit 0\n"
          + "}\n"
          + "trap 'emit \"$@\"' TERM\n"
          + "while :; do sleep 1; done\n";

  /**
   * The agent pod's termination grace, in seconds: on a kill or the backend's deadline the Job is
   * deleted and its pod with this grace, in which the agent's container is stopped (SIGTERM, then
   * SIGKILL) and the sidecar then writes its stream.
   */
  static final long AGENT_POD_GRACE_SECONDS = 20;

  // The sidecar's CPU and memory: busybox tar, tee, base64 and sha256sum stream the folder.
  static final long COLLECT_CPU_MILLIS = 100;
  static final int COLLECT_MEMORY_MB = 64;
  private static final int COLLECT_SCRATCH_MB = 1;

  /** The credentials tmpfs's size: credentials are tokens, and a Secret holds 1 MiB at most. */
  private static final int CREDENTIALS_TMPFS_MB = 2;

  /** The uid and gid every container of both pods runs as, whatever its image says. */
  static final long NON_ROOT_UID = 65532L;

  // At most the agent's own minimum (0.1 CPU, 64 MiB), so the pod's quota is the agent's.
  private static final long RUNTIME_CHECK_CPU_MILLIS = 100;
  private static final int RUNTIME_CHECK_MEMORY_MB = 64;

  private final KubernetesBackendConfig config;
  private final SessionContainers sessions;

  SandboxPods(KubernetesBackendConfig config) {
    this.config = config;
    this.sessions = new SessionContainers(config);
  }

  /**
   * The proxy's pod. The proxy image's launcher ({@code images/build.sh}) takes the policy document
   * from {@link #POLICY_ENV}, writes it to its {@code /tmp} and starts the proxy with {@code
   * --policy} on it; the document comes from the run's ConfigMap, so nothing is passed as arguments
   * and no file is mounted.
   */
  PodSpec proxy(RunSpec spec, Optional<String> runtimeClass) {
    SandboxQuota q = config.quota();
    boolean injects = !spec.proxyCredentials().isEmpty();
    List<VolumeMount> mounts = new ArrayList<>();
    mounts.add(mount("tmp", "/tmp", false));
    List<Volume> volumes = new ArrayList<>();
    volumes.add(scratch("tmp"));
    if (injects) {
      // The credentials the proxy injects: its pod's alone (the agent's pod never names them).
      volumes.add(InspectionPods.proxyCredentialsVolume());
      mounts.add(InspectionPods.proxyCredentialsMount());
    }
    return hardenedPod(runtimeClass)
        .withRestartPolicy("Never")
        .withVolumes(volumes)
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
        .withVolumeMounts(mounts)
        .endContainer()
        .build();
  }

  /**
   * The agent's pod: the run's command with the proxy's address in the proxy variables and, when
   * the run has credentials, those as files under {@link RunContract#CREDENTIALS_DIR} (see {@link
   * #CREDENTIALS_COPY_SCRIPT}) and as the variables their configuration names, read from the run's
   * Secret by the kubelet. A session's pod runs the step runner instead of the command, with the
   * session relay beside it ({@link SessionContainers}).
   */
  PodSpec agent(
      RunSpec spec,
      Optional<String> runtimeClass,
      Optional<String> ip,
      Optional<SessionWiring> session) {
    String proxyUrl =
        "http://" + ip.orElse(BundleFactory.PROXY_IP_AT_LAUNCH) + ":" + config.proxyPort();
    Map<String, EnvVar> env = new TreeMap<>();
    spec.env().forEach((key, value) -> env.put(key, new EnvVar(key, value, null)));
    for (RunCredential credential : spec.credentials()) {
      credential.env().ifPresent(key -> env.put(key, fromSecret(key, credential.name())));
    }
    boolean inspects = !spec.egress().inspect().isEmpty();
    if (inspects) {
      RunTrust.environment().forEach((key, value) -> env.put(key, new EnvVar(key, value, null)));
    }
    // The proxy and contract variables win over anything the run or a credential names, as on
    // Docker: a credential cannot be used to point the workload's traffic past the proxy.
    for (String key : List.of("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")) {
      env.put(key, new EnvVar(key, proxyUrl, null));
    }
    env.put(RunContract.RUN_ID_ENV, new EnvVar(RunContract.RUN_ID_ENV, spec.runId(), null));
    boolean credentials = !spec.credentials().isEmpty();
    if (credentials) {
      env.put(
          RunContract.CREDENTIALS_ENV,
          new EnvVar(RunContract.CREDENTIALS_ENV, RunContract.CREDENTIALS_DIR, null));
    }
    env.put(RunContract.OUT_ENV, new EnvVar(RunContract.OUT_ENV, RunContract.OUT_DIR, null));
    List<EnvVar> envVars = List.copyOf(env.values());
    PodSpecBuilder pod =
        hardenedPod(runtimeClass)
            .withRestartPolicy("Never")
            .withTerminationGracePeriodSeconds(AGENT_POD_GRACE_SECONDS)
            .withVolumes(
                scratch("tmp"), scratch("workspace"), scratch(OUT_VOLUME), collectScratch());
    List<VolumeMount> agentMounts = new ArrayList<>();
    agentMounts.add(mount("tmp", "/tmp", false));
    agentMounts.add(mount("workspace", "/workspace", false));
    agentMounts.add(mount(OUT_VOLUME, RunContract.OUT_DIR, false));
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
    if (credentials) {
      // After the runtime check: nothing of the run's is copied into a pod that failed it.
      pod.addToVolumes(credentialsSecretVolume(), credentialsVolume());
      pod.addToInitContainers(credentialsCopy(spec));
      agentMounts.add(mount(CREDENTIALS_VOLUME, RunContract.CREDENTIALS_DIR, true));
    }
    if (inspects) {
      pod.addToVolumes(InspectionPods.trustSourceVolume(), InspectionPods.trustVolume());
      pod.addToInitContainers(
          InspectionPods.trustInit(
              spec,
              hardenedContainer(),
              resources(RUNTIME_CHECK_CPU_MILLIS, RUNTIME_CHECK_MEMORY_MB)));
      agentMounts.add(InspectionPods.trustMount(true));
    }
    if (session.isPresent()) {
      pod.addAllToVolumes(sessions.volumes());
      pod.addToInitContainers(sessions.runnerCopy());
      agentMounts.add(sessions.agentMount());
    }
    // After the checks, so it starts only once they passed and then runs beside the agent until
    // the kubelet stops it after the agent's container ended.
    pod.addToInitContainers(collect());
    // The relay last: a native sidecar starts before the agent's container, which it waits for.
    session.ifPresent(wiring -> pod.addToInitContainers(sessions.relay(spec, wiring)));
    return pod.addToContainers(
            new ContainerBuilder()
                .withName(BundleFactory.AGENT_CONTAINER)
                .withImage(spec.image())
                .withCommand(session.isPresent() ? sessions.agentCommand() : spec.command())
                .withEnv(envVars)
                .withWorkingDir("/workspace")
                .withResources(
                    resources(BundleFactory.agentCpuMillis(spec), spec.resources().memoryMb()))
                .withSecurityContext(hardenedContainer())
                .withVolumeMounts(agentMounts)
                .build())
        .build();
  }

  /**
   * The native sidecar: hardened as the agent's container, with the out volume read-only at {@link
   * RunContract#OUT_DIR} and its own scratch on {@code /tmp}, nothing else (not the credentials).
   * Its ephemeral storage covers its log, which holds the out folder in base64 (4/3 of its size).
   */
  private Container collect() {
    long storageMb = collectStorageMb(config.quota());
    return new ContainerBuilder()
        .withName(COLLECT)
        .withImage(config.proxyImage())
        .withRestartPolicy("Always")
        .withCommand("/bin/sh", "-c", COLLECT_SCRIPT, "sh", RunContract.WORKSPACE, "/tmp")
        .withResources(resources(COLLECT_CPU_MILLIS, COLLECT_MEMORY_MB, storageMb))
        .withSecurityContext(hardenedContainer())
        .withVolumeMounts(
            mount(OUT_VOLUME, RunContract.OUT_DIR, true),
            mount(COLLECT_SCRATCH_VOLUME, "/tmp", false))
        .build();
  }

  /** The sidecar's ephemeral storage in MiB: its log of the out volume in base64, and slack. */
  static long collectStorageMb(SandboxQuota quota) {
    return (quota.ephemeralStorageMb() * 4L + 2) / 3 + 16;
  }

  private static Volume collectScratch() {
    return new VolumeBuilder()
        .withName(COLLECT_SCRATCH_VOLUME)
        .withNewEmptyDir()
        .withMedium("Memory")
        .withSizeLimit(new Quantity(COLLECT_SCRATCH_MB + "Mi"))
        .endEmptyDir()
        .build();
  }

  /** A variable the kubelet fills from one key of the run's credentials Secret. */
  private static EnvVar fromSecret(String variable, String key) {
    return new EnvVarBuilder()
        .withName(variable)
        .withNewValueFrom()
        .withNewSecretKeyRef()
        .withName(BundleFactory.CREDENTIALS_SECRET)
        .withKey(key)
        .withOptional(false)
        .endSecretKeyRef()
        .endValueFrom()
        .build();
  }

  /**
   * The run's Secret as the kubelet writes it: root-owned files, made group-readable for the pod's
   * fsGroup. Only the copy init container mounts it.
   */
  private static Volume credentialsSecretVolume() {
    return new VolumeBuilder()
        .withName(CREDENTIALS_SECRET_VOLUME)
        .withNewSecret()
        .withSecretName(BundleFactory.CREDENTIALS_SECRET)
        .withDefaultMode(CREDENTIALS_SECRET_MODE)
        .withOptional(false)
        .endSecret()
        .build();
  }

  /** The tmpfs the workload reads its credentials from: memory-backed, so never on a node disk. */
  private static Volume credentialsVolume() {
    return new VolumeBuilder()
        .withName(CREDENTIALS_VOLUME)
        .withNewEmptyDir()
        .withMedium("Memory")
        .withSizeLimit(new Quantity(CREDENTIALS_TMPFS_MB + "Mi"))
        .endEmptyDir()
        .build();
  }

  /** Copies each credential from the Secret's volume onto the tmpfs as the workload's 0400 file. */
  private Container credentialsCopy(RunSpec spec) {
    List<String> command = new ArrayList<>(List.of("/bin/sh", "-c", CREDENTIALS_COPY_SCRIPT, "sh"));
    spec.credentials().stream().map(RunCredential::name).sorted().forEach(command::add);
    return new ContainerBuilder()
        .withName(CREDENTIALS_COPY)
        .withImage(config.proxyImage())
        .withCommand(command)
        .withTerminationMessagePolicy("FallbackToLogsOnError")
        .withResources(resources(RUNTIME_CHECK_CPU_MILLIS, RUNTIME_CHECK_MEMORY_MB))
        .withSecurityContext(hardenedContainer())
        .withVolumeMounts(
            mount(CREDENTIALS_SECRET_VOLUME, CREDENTIALS_SECRET_MOUNT, true),
            mount(CREDENTIALS_VOLUME, RunContract.CREDENTIALS_DIR, false))
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

  static SecurityContext hardenedContainer() {
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
    return resources(cpuMillis, memoryMb, config.quota().ephemeralStorageMb());
  }

  static ResourceRequirements resources(long cpuMillis, long memoryMb, long storageMb) {
    // Requests equal limits: the pod is Guaranteed and cannot borrow beyond its caps.
    Map<String, Quantity> caps =
        Map.of(
            "cpu", new Quantity(cpuMillis + "m"),
            "memory", new Quantity(memoryMb + "Mi"),
            "ephemeral-storage", new Quantity(storageMb + "Mi"));
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

  static VolumeMount mount(String name, String path, boolean readOnly) {
    return new VolumeMountBuilder()
        .withName(name)
        .withMountPath(path)
        .withReadOnly(readOnly)
        .build();
  }
}
