package dev.agentsandbox.backend.docker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.agentsandbox.backend.RunCredential;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.backend.RunTrust;
import dev.agentsandbox.policy.config.Injection;
import dev.agentsandbox.policy.config.InspectedHost;
import dev.agentsandbox.policy.config.RunEgress;
import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.List;
import java.util.Optional;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.junit.jupiter.api.Test;

/**
 * A run that inspects hosts, laid out on Docker: the injected credential goes to the proxy's
 * container only (and a plan shows it redacted), the workload gets its placeholder, the trust
 * folder and the trust variables.
 */
class DockerInspectionTest {
  private static final String TOKEN = "ghs_docker0layout0token";

  private static RunSpec inspecting() {
    RunSpec base = RunLayoutTest.spec();
    RunEgress egress =
        new RunEgress(
            base.egress().allow(),
            base.egress().instanceAllow(),
            base.egress().internal(),
            base.egress().hosts(),
            List.of(
                new InspectedHost(
                    "api.example.com",
                    Optional.empty(),
                    Optional.of(Injection.of("github", "Authorization")))),
            Optional.empty());
    return new RunSpec(
            base.runId(),
            base.agent(),
            base.image(),
            base.command(),
            base.env(),
            egress,
            base.resources(),
            base.ttl(),
            base.expiresAt(),
            false)
        .withCredentials(
            List.of(new RunCredential("github", TOKEN, Optional.of("GH_TOKEN"), base.expiresAt())));
  }

  private final RunLayout layout =
      new RunLayout(inspecting(), DockerBackendConfig.defaults(), "runsc");

  @Test
  void theProxyGetsTheValueTheWorkloadThePlaceholder() throws Exception {
    ContainerSpec proxy = layout.proxy("172.30.0.1");
    String carried = proxy.env().get(DockerInspection.CREDENTIALS_ENV);
    try (TarArchiveInputStream tar =
        new TarArchiveInputStream(new ByteArrayInputStream(Base64.getDecoder().decode(carried)))) {
      TarArchiveEntry entry = tar.getNextEntry();
      assertThat(entry.getName()).isEqualTo("github");
      assertThat(entry.getMode() & 0777).isEqualTo(0400);
      assertThat(new String(tar.readAllBytes(), StandardCharsets.UTF_8)).isEqualTo(TOKEN);
    }
    assertThat(proxy.body().toString()).doesNotContain(TOKEN).doesNotContain(carried);
    assertThat(layout.proxyPolicyJson("172.30.0.1"))
        .contains(DockerInspection.PROXY_CREDENTIALS_DIR)
        .doesNotContain(TOKEN);

    ContainerSpec agent = layout.agent("172.30.0.2");
    assertThat(agent.env())
        .containsEntry("GH_TOKEN", Injection.PLACEHOLDER)
        .containsAllEntriesOf(RunTrust.environment())
        .doesNotContainKey(DockerInspection.CREDENTIALS_ENV);
    assertThat(agent.env().values()).doesNotContain(TOKEN);
    assertThat(agent.mounts())
        .contains(new VolumeSpec.Mount(layout.trustName(), RunTrust.DIR, true));
    try (TarArchiveInputStream tar =
        new TarArchiveInputStream(new ByteArrayInputStream(layout.files().credentialsArchive()))) {
      TarArchiveEntry entry = tar.getNextEntry();
      assertThat(entry.getName()).isEqualTo("github");
      assertThat(new String(tar.readAllBytes(), StandardCharsets.UTF_8))
          .isEqualTo(Injection.PLACEHOLDER);
    }
  }

  @Test
  void thePlanShowsTheTrustVolumeAndNoValue() {
    String plan =
        layout
            .plan(dev.agentsandbox.backend.Isolation.GVISOR, "10.214.0.0/21")
            .manifests()
            .toString();
    assertThat(plan).contains(layout.trustName()).contains("trust-copy").doesNotContain(TOKEN);
  }

  @Test
  void theTrustVolumeIsCreatedWithTheFenceBeforeTheProxyThatMountsIt() {
    assertThat(layout.fenceObjects().volumes())
        .extracting(VolumeSpec::name)
        .containsExactly(layout.workspaceName(), layout.credentialsName(), layout.trustName());
    assertThat(layout.fenceObjects().proxyAt().apply("172.30.0.1").mounts())
        .contains(new VolumeSpec.Mount(layout.trustName(), DockerInspection.PROXY_TRUST, false));
  }

  @Test
  void aSessionsIdleWorkloadTrustsTheRunCaBesideTheStepRunner() {
    // A session's workload idles and holds the runner; its steps get the same trust as a run's.
    RunLayout idle =
        new RunLayout(
            inspecting(),
            DockerBackendConfig.defaults(),
            "runsc",
            java.util.OptionalLong.of(600),
            inspecting().runId());
    ContainerSpec agent = idle.agent("172.30.0.2");
    assertThat(agent.entrypoint()).containsExactly("sleep", "600");
    assertThat(agent.env())
        .containsAllEntriesOf(RunTrust.environment())
        .containsEntry("GH_TOKEN", Injection.PLACEHOLDER);
    assertThat(agent.mounts())
        .extracting(VolumeSpec.Mount::target)
        .contains(RunTrust.DIR, SessionRunner.DIR);
    assertThat(idle.fenceObjects().volumes())
        .extracting(VolumeSpec::name)
        .contains(idle.trustName());
  }

  @Test
  void aRunThatInspectsIsNeverLaidOutOnAStandby() {
    // A standby's proxy was started without the run's injected credentials or trust volume.
    assertThatThrownBy(
            () ->
                new RunLayout(
                    inspecting(),
                    DockerBackendConfig.defaults(),
                    "runsc",
                    java.util.OptionalLong.empty(),
                    "standby-1"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("built cold, never on a standby");
  }

  @Test
  void aRunThatInspectsNothingIsLaidOutAsBefore() {
    RunLayout plain = new RunLayout(RunLayoutTest.spec(), DockerBackendConfig.defaults(), "runsc");
    assertThat(plain.proxy("172.30.0.1").env()).doesNotContainKey(DockerInspection.CREDENTIALS_ENV);
    assertThat(plain.agent("172.30.0.2").env())
        .doesNotContainKeys(RunTrust.environment().keySet().toArray(String[]::new));
    assertThat(
            plain
                .plan(dev.agentsandbox.backend.Isolation.GVISOR, "10.214.0.0/21")
                .manifests()
                .toString())
        .doesNotContain("-trust");
    assertThat(plain.fenceObjects().volumes()).hasSize(2);
  }
}
