package dev.agentsandbox.backend.k8s;

import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.backend.RunContract;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.fabric8.kubernetes.api.model.batch.v1.Job;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The agent pod's collect sidecar and out volume, as the Job's template carries them. */
class SandboxPodsOutputTest {
  private static final BundleFactory FACTORY = new BundleFactory(Specs.config());

  private static PodSpec agentPod() {
    // A run with credentials: the sidecar must still see none of them.
    KubernetesBundle bundle =
        FACTORY.build(Specs.withCredentials("p1"), Optional.of("gvisor"), Optional.of("10.0.0.9"));
    return bundle.get(Job.class, BundleFactory.JOB).getSpec().getTemplate().getSpec();
  }

  private static Container sidecar(PodSpec pod) {
    return pod.getInitContainers().stream()
        .filter(c -> c.getName().equals(SandboxPods.COLLECT))
        .findFirst()
        .orElseThrow();
  }

  private static Container agent(PodSpec pod) {
    return pod.getContainers().get(0);
  }

  @Test
  void theSidecarIsANativeSidecarStartedLastAfterTheChecks() {
    PodSpec pod = agentPod();
    assertThat(pod.getInitContainers())
        .extracting(Container::getName)
        .containsExactly(
            SandboxPods.RUNTIME_CHECK, SandboxPods.CREDENTIALS_COPY, SandboxPods.COLLECT);
    Container collect = sidecar(pod);
    // restartPolicy Always on an init container is what makes it a sidecar: started before the
    // agent, running beside it, and stopped by the kubelet only after the agent's container ended.
    assertThat(collect.getRestartPolicy()).isEqualTo("Always");
    assertThat(collect.getImage()).isEqualTo(Specs.config().proxyImage());
    assertThat(collect.getCommand())
        .containsExactly(
            "/bin/sh", "-c", SandboxPods.COLLECT_SCRIPT, "sh", RunContract.WORKSPACE, "/tmp");
    assertThat(pod.getTerminationGracePeriodSeconds())
        .isEqualTo(SandboxPods.AGENT_POD_GRACE_SECONDS);
  }

  @Test
  void theSidecarIsHardenedAsTheAgentsContainer() {
    PodSpec pod = agentPod();
    Container collect = sidecar(pod);
    assertThat(collect.getSecurityContext()).isEqualTo(agent(pod).getSecurityContext());
    var security = collect.getSecurityContext();
    assertThat(security.getRunAsNonRoot()).isTrue();
    assertThat(security.getReadOnlyRootFilesystem()).isTrue();
    assertThat(security.getAllowPrivilegeEscalation()).isFalse();
    assertThat(security.getPrivileged()).isFalse();
    assertThat(security.getCapabilities().getDrop()).containsExactly("ALL");
    assertThat(security.getCapabilities().getAdd()).isEmpty();
    assertThat(security.getSeccompProfile().getType()).isEqualTo("RuntimeDefault");
    // The pod's user applies to it as to every container of the pod.
    assertThat(pod.getSecurityContext().getRunAsUser()).isEqualTo(SandboxPods.NON_ROOT_UID);
    // Requests equal limits, so the namespace's quota counts exactly what it may use.
    Map<String, Quantity> limits = collect.getResources().getLimits();
    assertThat(limits).containsKeys("cpu", "memory", "ephemeral-storage");
    assertThat(collect.getResources().getRequests()).isEqualTo(limits);
    assertThat(limits.get("ephemeral-storage"))
        .isEqualTo(new Quantity(SandboxPods.collectStorageMb(Specs.config().quota()) + "Mi"));
  }

  @Test
  void theSidecarSharesOnlyTheOutVolumeReadOnlyAndNeverTheCredentials() {
    PodSpec pod = agentPod();
    Container collect = sidecar(pod);
    assertThat(collect.getVolumeMounts())
        .extracting(m -> m.getName() + " " + m.getMountPath() + " ro=" + m.getReadOnly())
        .containsExactlyInAnyOrder(
            "out /workspace/out ro=true", SandboxPods.COLLECT_SCRATCH_VOLUME + " /tmp ro=false");
    assertThat(collect.getEnv()).isEmpty();
    assertThat(collect.getEnvFrom()).isEmpty();
    // Its scratch is its own: the agent does not mount it.
    assertThat(agent(pod).getVolumeMounts())
        .extracting(VolumeMount::getName)
        .doesNotContain(SandboxPods.COLLECT_SCRATCH_VOLUME)
        .contains(SandboxPods.CREDENTIALS_VOLUME);
    Volume scratch =
        pod.getVolumes().stream()
            .filter(v -> v.getName().equals(SandboxPods.COLLECT_SCRATCH_VOLUME))
            .findFirst()
            .orElseThrow();
    assertThat(scratch.getEmptyDir().getMedium()).isEqualTo("Memory");
    assertThat(scratch.getEmptyDir().getSizeLimit()).isEqualTo(new Quantity("1Mi"));
  }

  @Test
  void theAgentWritesItsOutputsToTheOutVolumeNamedByItsVariable() {
    PodSpec pod = agentPod();
    assertThat(agent(pod).getVolumeMounts())
        .filteredOn(m -> m.getName().equals(SandboxPods.OUT_VOLUME))
        .singleElement()
        .satisfies(
            m -> {
              assertThat(m.getMountPath()).isEqualTo(RunContract.OUT_DIR);
              assertThat(m.getReadOnly()).isFalse();
            });
    assertThat(agent(pod).getEnv())
        .filteredOn(e -> e.getName().equals(RunContract.OUT_ENV))
        .singleElement()
        .satisfies(e -> assertThat(e.getValue()).isEqualTo(RunContract.OUT_DIR));
    Volume out =
        pod.getVolumes().stream()
            .filter(v -> v.getName().equals(SandboxPods.OUT_VOLUME))
            .findFirst()
            .orElseThrow();
    assertThat(out.getEmptyDir().getSizeLimit())
        .isEqualTo(new Quantity(Specs.config().quota().ephemeralStorageMb() + "Mi"));
  }
}
