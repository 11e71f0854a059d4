package dev.agentsandbox.backend.k8s;

import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.relay.CertificatePin;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.ResourceQuota;
import io.fabric8.kubernetes.api.model.SecurityContext;
import io.fabric8.kubernetes.api.model.batch.v1.Job;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * A session's bundle is its run's bundle plus named additions and nothing else: the same fence,
 * RuntimeClass, runtime check, deadline, credentials and limits, the quota larger by exactly the
 * relay's share, the session's policy, the runner's copy and the relay. The relay and the copy are
 * hardened as every container, the relay under a uid of its own and sharing nothing of the agent's;
 * no key is anywhere in the spec.
 */
class SessionBundleTest {
  private static final KubernetesSerialization K8S = new KubernetesSerialization();
  private static final KubernetesBackendConfig CONFIG = Specs.config();
  private static final String PIN = "cd".repeat(32);
  private static final RunSpec SPEC = Specs.withCredentials("r7");
  private static final KubernetesBundle RUN =
      new BundleFactory(CONFIG).build(SPEC, Optional.of("gvisor"), Optional.of("10.43.0.9"));
  private static final KubernetesBundle SESSION =
      new BundleFactory(CONFIG)
          .build(
              SPEC,
              Optional.of("gvisor"),
              Optional.of("10.43.0.9"),
              Optional.of(SessionWiring.of(new CertificatePin(PIN))));

  private static List<String> names(KubernetesBundle bundle) {
    return bundle.objects().stream()
        .map(o -> o.getKind() + " " + o.getMetadata().getName())
        .toList();
  }

  private static PodSpec pod(KubernetesBundle bundle) {
    return bundle.get(Job.class, BundleFactory.JOB).getSpec().getTemplate().getSpec();
  }

  private static Container init(PodSpec pod, String name) {
    return pod.getInitContainers().stream()
        .filter(c -> c.getName().equals(name))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no init container " + name));
  }

  @Test
  void aSessionsBundleIsItsRunsWithTheNamedAdditionsOnly() {
    List<String> expected = new java.util.ArrayList<>(names(RUN));
    expected.add(
        expected.indexOf("NetworkPolicy " + NetworkFence.PROXY_FENCE) + 1,
        "NetworkPolicy " + NetworkFence.SESSION_INGRESS);
    assertThat(names(SESSION)).containsExactlyElementsOf(expected);
    for (HasMetadata object : RUN.objects()) {
      if (object instanceof ResourceQuota || object instanceof Job) {
        continue;
      }
      assertThat(
              SESSION.objects().stream()
                  .filter(o -> o.getKind().equals(object.getKind()))
                  .filter(o -> o.getMetadata().getName().equals(object.getMetadata().getName()))
                  .findFirst()
                  .orElseThrow())
          .as(object.getKind() + " " + object.getMetadata().getName())
          .isEqualTo(object);
    }
  }

  @Test
  void theQuotaGrowsByTheRelaysShareAndNothingElse() {
    Map<String, Quantity> run =
        RUN.get(ResourceQuota.class, BundleFactory.SERVICE_ACCOUNT).getSpec().getHard();
    Map<String, Quantity> session =
        SESSION.get(ResourceQuota.class, BundleFactory.SERVICE_ACCOUNT).getSpec().getHard();
    assertThat(session.keySet()).isEqualTo(run.keySet());
    Map<String, Long> grown =
        Map.of(
            "cpu", SessionContainers.RELAY_CPU_MILLIS,
            "memory", SessionContainers.RELAY_MEMORY_MB * 1024L * 1024L,
            "ephemeral-storage", SessionContainers.RELAY_STORAGE_MB * 1024L * 1024L);
    Map<String, String> differences = new TreeMap<>();
    for (String key : run.keySet()) {
      var before = Quantity.getAmountInBytes(run.get(key));
      var after = Quantity.getAmountInBytes(session.get(key));
      if (before.compareTo(after) != 0) {
        differences.put(key, after.subtract(before).stripTrailingZeros().toPlainString());
      }
    }
    Map<String, String> wanted = new TreeMap<>();
    for (String bound : List.of("requests", "limits")) {
      grown.forEach(
          (resource, amount) ->
              wanted.put(
                  bound + "." + resource,
                  (resource.equals("cpu")
                          ? new java.math.BigDecimal(amount).movePointLeft(3)
                          : new java.math.BigDecimal(amount))
                      .stripTrailingZeros()
                      .toPlainString()));
    }
    assertThat(differences).isEqualTo(wanted);
  }

  @Test
  void theJobIsTheRunsBarTheRunnerAndTheRelay() {
    Job session = K8S.clone(SESSION.get(Job.class, BundleFactory.JOB));
    Job run = RUN.get(Job.class, BundleFactory.JOB);
    PodSpec pod = session.getSpec().getTemplate().getSpec();
    assertThat(pod.getRuntimeClassName()).isEqualTo("gvisor");
    assertThat(session.getSpec().getActiveDeadlineSeconds())
        .isNotNull()
        .isEqualTo(run.getSpec().getActiveDeadlineSeconds());
    // Take the additions out: what is left must be the run's Job exactly.
    pod.getVolumes()
        .removeIf(
            v ->
                v.getName().equals(SessionContainers.RUNNER_VOLUME)
                    || v.getName().equals(SessionContainers.RELAY_SCRATCH_VOLUME));
    pod.getInitContainers()
        .removeIf(
            c ->
                c.getName().equals(SessionContainers.RUNNER_COPY)
                    || c.getName().equals(SessionContainers.RELAY));
    Container agent = pod.getContainers().get(0);
    assertThat(agent.getCommand())
        .containsExactly(
            SessionContainers.RUNNER_DIR + "/asb-step-runner",
            "--workspace",
            "/workspace",
            "--listen",
            "127.0.0.1:" + CONFIG.sessions().runnerPort());
    agent.setCommand(SPEC.command());
    agent.getVolumeMounts().removeIf(m -> m.getMountPath().equals(SessionContainers.RUNNER_DIR));
    assertThat(session).isEqualTo(run);
  }

  @Test
  void theRelayAndTheCopyAreHardenedAndShareNothingOfTheAgents() {
    PodSpec pod = pod(SESSION);
    long workload = pod.getSecurityContext().getRunAsUser();
    Container relay = init(pod, SessionContainers.RELAY);
    Container copy = init(pod, SessionContainers.RUNNER_COPY);
    for (Container container : List.of(relay, copy)) {
      SecurityContext security = container.getSecurityContext();
      assertThat(security.getPrivileged()).as(container.getName()).isFalse();
      assertThat(security.getAllowPrivilegeEscalation()).as(container.getName()).isFalse();
      assertThat(security.getRunAsNonRoot()).as(container.getName()).isTrue();
      assertThat(security.getReadOnlyRootFilesystem()).as(container.getName()).isTrue();
      assertThat(security.getCapabilities().getDrop())
          .as(container.getName())
          .containsExactly("ALL");
      assertThat(security.getCapabilities().getAdd()).as(container.getName()).isNullOrEmpty();
      assertThat(security.getSeccompProfile().getType()).isEqualTo("RuntimeDefault");
      assertThat(container.getImage()).isEqualTo(CONFIG.proxyImage());
      assertThat(container.getEnvFrom()).as(container.getName()).isNullOrEmpty();
    }
    // The relay: its own uid and gid, its own scratch folder, the pod's address, nothing else.
    assertThat(relay.getSecurityContext().getRunAsUser())
        .isEqualTo(SessionContainers.RELAY_UID)
        .isNotEqualTo(workload);
    assertThat(relay.getSecurityContext().getRunAsGroup()).isEqualTo(SessionContainers.RELAY_UID);
    assertThat(relay.getRestartPolicy()).isEqualTo("Always");
    assertThat(relay.getVolumeMounts())
        .extracting(m -> m.getName() + " " + m.getMountPath())
        .containsExactly(SessionContainers.RELAY_SCRATCH_VOLUME + " /tmp");
    assertThat(relay.getEnv())
        .singleElement()
        .satisfies(
            env -> {
              assertThat(env.getName()).isEqualTo(SessionContainers.POD_IP_ENV);
              assertThat(env.getValueFrom().getFieldRef().getFieldPath()).isEqualTo("status.podIP");
            });
    assertThat(relay.getPorts())
        .extracting(p -> p.getProtocol() + " " + p.getContainerPort())
        .containsExactly("TCP " + CONFIG.sessions().port());
    assertThat(relay.getCommand()).contains("--client-sha256", PIN, SPEC.runId());
    // The copy writes the runner's volume only; the agent mounts it read-only.
    assertThat(copy.getVolumeMounts())
        .extracting(m -> m.getName() + " " + m.getMountPath() + " ro=" + m.getReadOnly())
        .containsExactly(
            SessionContainers.RUNNER_VOLUME + " " + SessionContainers.RUNNER_DIR + " ro=false");
    assertThat(pod.getContainers().get(0).getVolumeMounts())
        .filteredOn(m -> m.getName().equals(SessionContainers.RUNNER_VOLUME))
        .singleElement()
        .satisfies(m -> assertThat(m.getReadOnly()).isTrue());
    // No key anywhere: the spec as text holds the pin and no PEM.
    String text = K8S.asJson(SESSION.get(Job.class, BundleFactory.JOB));
    assertThat(text).contains(PIN).doesNotContain("PRIVATE", "BEGIN ", "MII");
  }
}
