package dev.agentsandbox.backend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Instant;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;

class BackendSelectorTest {

  /** A backend whose probe answers as told; selection never launches anything. */
  private static final class Probed implements SandboxBackend {
    private final Probe probe;
    final AtomicInteger probes = new AtomicInteger();

    Probed(Probe probe) {
      this.probe = probe;
    }

    @Override
    public String name() {
      return probe.backend();
    }

    @Override
    public Probe probe() {
      probes.incrementAndGet();
      return probe;
    }

    @Override
    public SandboxPlan plan(RunSpec spec) {
      throw new AssertionError("selection must not plan");
    }

    @Override
    public Sandbox launch(RunSpec spec, SandboxListener listener) {
      throw new AssertionError("selection must not launch");
    }

    @Override
    public ReapReport reap(Instant now, Predicate<String> isLive) {
      throw new AssertionError("selection must not reap");
    }
  }

  private static final Probed FIRECRACKER_MISSING =
      new Probed(Probe.unavailable("firecracker", "/dev/kvm is absent"));
  private static final Probed K8S_RUNC =
      new Probed(new Probe("k8s", true, Isolation.CONTAINER, "runc", "no gvisor RuntimeClass"));
  private static final Probed K8S_MISSING =
      new Probed(Probe.unavailable("k8s", "no kubeconfig or service account"));
  private static final Probed DOCKER_RUNSC =
      new Probed(new Probe("docker", true, Isolation.GVISOR, "runsc", "runsc registered"));
  private static final Probed DOCKER_RUNC =
      new Probed(new Probe("docker", true, Isolation.CONTAINER, "runc", "runsc not registered"));
  private static final Probed DOCKER_MISSING =
      new Probed(Probe.unavailable("docker", "no daemon at /var/run/docker.sock"));

  @Test
  void autoPicksTheStrongestIsolationAvailable() {
    BackendSelector selector =
        new BackendSelector(List.of(FIRECRACKER_MISSING, K8S_RUNC, DOCKER_RUNSC));
    assertThat(selector.select("auto", false).backend()).isSameAs(DOCKER_RUNSC);
  }

  @Test
  void autoBreaksTiesByTheGivenOrder() {
    Probed k8sGvisor =
        new Probed(new Probe("k8s", true, Isolation.GVISOR, "gvisor", "RuntimeClass gvisor"));
    BackendSelector selector = new BackendSelector(List.of(k8sGvisor, DOCKER_RUNSC));
    assertThat(selector.select("auto", false).backend()).isSameAs(k8sGvisor);
  }

  @Test
  void aNamedBackendTheHostLacksRefusesRatherThanFallingBack() {
    BackendSelector selector = new BackendSelector(List.of(FIRECRACKER_MISSING, DOCKER_RUNSC));
    assertThatThrownBy(() -> selector.select("firecracker", false))
        .isInstanceOf(NoUsableBackendException.class)
        .hasMessageContaining("never replaced by a weaker one")
        .hasMessageContaining("firecracker: /dev/kvm is absent");
  }

  @Test
  void requireRuntimeClassRefusesARuncOnlyHost() {
    BackendSelector selector = new BackendSelector(List.of(K8S_RUNC, DOCKER_RUNC));
    assertThatThrownBy(() -> selector.select("auto", true))
        .isInstanceOfSatisfying(
            NoUsableBackendException.class,
            e ->
                assertThat(e.attempts())
                    .containsExactly(
                        "k8s: offers only runc and require_runtime_class demands gVisor or"
                            + " stronger",
                        "docker: offers only runc and require_runtime_class demands gVisor or"
                            + " stronger"));
  }

  @Test
  void requireRuntimeClassSkipsTheWeakBackendUnderAuto() {
    BackendSelector selector = new BackendSelector(List.of(K8S_RUNC, DOCKER_RUNSC));
    assertThat(selector.select("auto", true).backend()).isSameAs(DOCKER_RUNSC);
  }

  @Test
  void everyAttemptIsListedWhenNothingIsUsable() {
    BackendSelector selector =
        new BackendSelector(List.of(FIRECRACKER_MISSING, K8S_MISSING, DOCKER_MISSING));
    assertThatThrownBy(() -> selector.select("auto", false))
        .hasMessageContaining("firecracker: /dev/kvm is absent")
        .hasMessageContaining("k8s: no kubeconfig")
        .hasMessageContaining("docker: no daemon");
  }

  @Test
  void anUnknownNameIsRefusedWithoutProbingAnything() {
    Probed docker = new Probed(DOCKER_RUNSC.probe);
    BackendSelector selector = new BackendSelector(List.of(docker));
    assertThatThrownBy(() -> selector.select("lxc", false))
        .hasMessageContaining("'lxc' is not one this control plane knows");
    assertThat(docker.probes).hasValue(0);
  }

  private static final Probed MICROVM_KVM =
      new Probed(new Probe("microvm", true, Isolation.MICROVM, "qemu-kvm", "booted under KVM"));
  private static final Probed MICROVM_TCG =
      new Probed(new Probe("microvm", true, Isolation.EMULATED, "qemu-tcg", "software emulation"));

  @Test
  void autoRanksAHardwareMicroVmAboveGvisor() {
    BackendSelector selector = new BackendSelector(List.of(MICROVM_KVM, K8S_RUNC, DOCKER_RUNSC));
    assertThat(selector.select("auto", true).backend()).isSameAs(MICROVM_KVM);
  }

  @Test
  void autoNeverPicksSoftwareEmulation() {
    BackendSelector selector = new BackendSelector(List.of(MICROVM_TCG, DOCKER_RUNC));
    assertThat(selector.select("auto", false).backend()).isSameAs(DOCKER_RUNC);
    BackendSelector alone = new BackendSelector(List.of(MICROVM_TCG));
    assertThatThrownBy(() -> alone.select("auto", false))
        .hasMessageContaining("microvm: offers only software emulation, which auto never picks");
  }

  @Test
  void softwareEmulationIsUsedWhenNamedAndCountsAsStrongerThanGvisor() {
    BackendSelector selector = new BackendSelector(List.of(MICROVM_TCG, DOCKER_RUNSC));
    assertThat(selector.select("microvm", true).backend()).isSameAs(MICROVM_TCG);
  }
}
