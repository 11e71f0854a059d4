package dev.agentsandbox.backend.docker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.agentsandbox.backend.Isolation;
import dev.agentsandbox.backend.Labels;
import dev.agentsandbox.backend.Manifest;
import dev.agentsandbox.backend.RunCredential;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.backend.SandboxPlan;
import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.config.Resources;
import dev.agentsandbox.policy.config.RunEgress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Predicate;
import java.util.stream.Stream;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class RunLayoutTest {
  private static final Instant EXPIRES = Instant.parse("2026-01-01T00:00:00Z");

  static RunSpec spec() {
    return new RunSpec(
        "r1",
        "helper",
        "example/agent:1",
        List.of("sh", "-c", "echo hi"),
        Map.of("API_TOKEN", "s3cret-value"),
        new RunEgress(
            AllowList.parse(List.of("api.example.com", "*.pypi.org:8443")),
            Optional.of(AllowList.parse(List.of("*.example.com", "*.pypi.org:8443"))),
            List.of(
                dev.agentsandbox.policy.config.InternalDestination.range(
                    "mirror", "10.20.0.0/16", 443)),
            Map.of("mirror.internal.example.com", List.of("10.20.0.5"))),
        new Resources(0.5, 256, 64),
        Duration.ofMinutes(5),
        EXPIRES,
        false);
  }

  private static final RunLayout LAYOUT =
      new RunLayout(spec(), DockerBackendConfig.defaults(), "runsc");

  static Stream<Arguments> workloadHardening() {
    ContainerSpec agent = LAYOUT.agent("172.30.0.2");
    return Stream.of(
        row("runs under the runtime the probe chose", agent, a -> a.runtime().equals("runsc")),
        row(
            "runs as a non-root user whatever the image says",
            agent,
            a -> a.user().equals("65534:65534")),
        row("sits on the fenced network only", agent, a -> a.network().equals("asb-r1-fence")),
        row(
            "writes only to a small tmpfs",
            agent,
            a -> a.tmpfs().equals(Map.of("/tmp", "rw,nosuid,nodev,size=64m,mode=1777"))),
        row(
            "is capped at the run's memory, no swap beyond it",
            agent,
            a -> a.memoryBytes() == 256L * 1024 * 1024),
        row("is capped at the run's CPUs", agent, a -> a.nanoCpus() == 500_000_000L),
        row("is capped at the run's pids", agent, a -> a.pidsLimit() == 64),
        row(
            "finds the proxy through both spellings of the proxy variables",
            agent,
            a ->
                a.env().get("HTTPS_PROXY").equals("http://172.30.0.2:3128")
                    && a.env().get("http_proxy").equals("http://172.30.0.2:3128")
                    && a.env().get("NO_PROXY").isEmpty()),
        row(
            "gets the run's env and nothing of the platform's",
            agent,
            a ->
                a.env()
                    .keySet()
                    .equals(
                        java.util.Set.of(
                            "API_TOKEN",
                            "HTTP_PROXY",
                            "HTTPS_PROXY",
                            "http_proxy",
                            "https_proxy",
                            "NO_PROXY",
                            "no_proxy",
                            "AGENT_SANDBOX_OUT",
                            "AGENT_SANDBOX_CREDENTIALS",
                            "AGENT_SANDBOX_RUN_ID"))),
        row("carries the run's labels", agent, a -> a.labels().equals(spec().labels())));
  }

  private static Arguments row(String name, ContainerSpec spec, Predicate<ContainerSpec> holds) {
    return Arguments.of(name, spec, holds);
  }

  @ParameterizedTest(name = "the workload {0}")
  @MethodSource("workloadHardening")
  void workloadIsHardened(String name, ContainerSpec agent, Predicate<ContainerSpec> holds) {
    assertThat(holds.test(agent)).as(name).isTrue();
  }

  @Test
  void everyContainerDropsAllCapabilitiesAndPrivilegesAndMountsNothingOfTheHost() {
    for (Manifest manifest : LAYOUT.plan(Isolation.GVISOR, "10.214.0.0/21").manifests()) {
      if (!manifest.kind().equals("container")) {
        continue;
      }
      @SuppressWarnings("unchecked")
      Map<String, Object> host =
          (Map<String, Object>) ((Map<String, Object>) manifest.body()).get("HostConfig");
      assertThat(host)
          .as(manifest.name())
          .containsEntry("CapDrop", List.of("ALL"))
          .containsEntry("SecurityOpt", List.of("no-new-privileges:true"))
          .containsEntry("ReadonlyRootfs", true)
          .containsEntry("Privileged", false)
          .containsEntry("Binds", List.of());
    }
  }

  @Test
  void thePrivateNetworkIsInternalAndGivesTheHostNoAddressOnIt() {
    assertThat(LAYOUT.fence().internal()).isTrue();
    assertThat(LAYOUT.fence().options())
        .containsEntry("com.docker.network.bridge.inhibit_ipv4", "true");
    assertThat(LAYOUT.egress().internal()).isFalse();
    assertThat(LAYOUT.fence().body("10.214.0.0/28", "10.214.0.1"))
        .containsEntry("EnableIPv6", false);
  }

  @Test
  void thePlanListsEveryObjectInCreationOrderAllLabelled() {
    SandboxPlan plan = LAYOUT.plan(Isolation.GVISOR, "10.214.0.0/21");
    assertThat(plan.manifests())
        .extracting(Manifest::kind, Manifest::name)
        .containsExactly(
            org.assertj.core.groups.Tuple.tuple("volume", "asb-r1-workspace"),
            org.assertj.core.groups.Tuple.tuple("volume", "asb-r1-credentials"),
            org.assertj.core.groups.Tuple.tuple("network", "asb-r1-fence"),
            org.assertj.core.groups.Tuple.tuple("network", "asb-r1-egress"),
            org.assertj.core.groups.Tuple.tuple("container", "asb-r1-proxy"),
            org.assertj.core.groups.Tuple.tuple("network-connect", "asb-r1-egress"),
            org.assertj.core.groups.Tuple.tuple("credentials-copy", "asb-r1-credentials"),
            org.assertj.core.groups.Tuple.tuple("container", "asb-r1-agent"),
            org.assertj.core.groups.Tuple.tuple("workspace-out", "asb-r1-workspace"));
    assertThat(plan.runtime()).isEqualTo("runsc");
    for (Manifest manifest : plan.manifests()) {
      if (manifest.kind().equals("volume")
          || manifest.kind().equals("network")
          || manifest.kind().equals("container")) {
        @SuppressWarnings("unchecked")
        Map<String, String> labels =
            (Map<String, String>) ((Map<String, Object>) manifest.body()).get("Labels");
        assertThat(labels)
            .as(manifest.name())
            .containsEntry(Labels.MANAGED_BY, Labels.MANAGER)
            .containsEntry(Labels.RUN_ID, "r1")
            .containsEntry(Labels.AGENT, "helper")
            .containsEntry(Labels.EXPIRES_AT, Long.toString(EXPIRES.getEpochSecond()));
      }
    }
  }

  @Test
  void thePlanNeverShowsTheRunsSecretValues() throws Exception {
    String json =
        new ObjectMapper().writeValueAsString(LAYOUT.plan(Isolation.GVISOR, "10.214.0.0/21"));
    assertThat(json).doesNotContain("s3cret-value").contains("API_TOKEN=<redacted>");
  }

  private static final RunLayout WITH_CREDENTIALS =
      new RunLayout(
          spec()
              .withCredentials(
                  List.of(
                      new RunCredential(
                          "gateway-jwt", "jwt-SECRET-1", Optional.of("GATEWAY_TOKEN"), EXPIRES),
                      new RunCredential("aws", "aws-SECRET-2", Optional.empty(), EXPIRES))),
          DockerBackendConfig.defaults(),
          "runsc");

  @Test
  void theWorkspaceAndCredentialsAreTmpfsVolumesOwnedByTheWorkloadUser() {
    assertThat(WITH_CREDENTIALS.workspace().driverOptions())
        .containsEntry("type", "tmpfs")
        .containsEntry("device", "tmpfs")
        .containsEntry("o", "size=64m,uid=65534,gid=65534,mode=0700");
    assertThat(WITH_CREDENTIALS.credentials().driverOptions())
        .containsEntry("type", "tmpfs")
        .containsEntry("o", "size=1m,uid=65534,gid=65534,mode=0500");
    assertThat(WITH_CREDENTIALS.workspace().labels()).isEqualTo(spec().labels());
    assertThat(WITH_CREDENTIALS.credentials().labels()).isEqualTo(spec().labels());
  }

  @Test
  void theWorkloadMountsTheWorkspaceWritableAndTheCredentialsReadOnly() {
    ContainerSpec agent = WITH_CREDENTIALS.agent("172.30.0.2");
    assertThat(agent.mounts())
        .containsExactlyInAnyOrder(
            new VolumeSpec.Mount("asb-r1-workspace", "/workspace", false),
            new VolumeSpec.Mount("asb-r1-credentials", "/run/agent-sandbox/credentials", true));
    assertThat(agent.env())
        .containsEntry("AGENT_SANDBOX_OUT", "/workspace/out")
        .containsEntry("AGENT_SANDBOX_CREDENTIALS", "/run/agent-sandbox/credentials")
        .containsEntry("AGENT_SANDBOX_RUN_ID", "r1")
        .containsEntry("GATEWAY_TOKEN", "jwt-SECRET-1");
    assertThat(agent.env().values()).as("a credential without env").doesNotContain("aws-SECRET-2");
  }

  @Test
  void theProxyHoldsBothVolumesUnderAnotherUserThanTheWorkload() {
    ContainerSpec proxy = WITH_CREDENTIALS.proxy("172.30.0.2");
    ContainerSpec agent = WITH_CREDENTIALS.agent("172.30.0.2");
    assertThat(proxy.user()).isNotEqualTo(agent.user());
    assertThat(proxy.user().split(":")[0]).isNotEqualTo(agent.user().split(":")[0]);
    assertThat(proxy.mounts())
        .extracting(VolumeSpec.Mount::volume)
        .containsExactlyInAnyOrder("asb-r1-workspace", "asb-r1-credentials");
    assertThat(proxy.mounts())
        .extracting(VolumeSpec.Mount::target)
        .noneMatch(t -> t.startsWith("/workspace") || t.startsWith("/run/agent-sandbox"));
    DockerBackendConfig clash =
        DockerBackendConfig.builder()
            .proxyImage("p")
            .workloadUser("65533:65533")
            .proxyReadyTimeout(Duration.ofSeconds(1))
            .build();
    assertThat(new RunLayout(spec(), clash, "runc").proxy("172.30.0.2").user())
        .startsWith("65532:");
  }

  @Test
  void withAnInstanceEveryObjectAndThePlanCarryIt() {
    RunLayout layout =
        new RunLayout(
            spec(),
            DockerBackendConfig.defaults().toBuilder().instance("0123456789abcdef").build(),
            "runsc");
    assertThat(layout.workspace().labels()).containsEntry(Labels.INSTANCE, "0123456789abcdef");
    assertThat(layout.credentials().labels()).containsEntry(Labels.INSTANCE, "0123456789abcdef");
    assertThat(layout.proxy("172.30.0.2").labels())
        .containsEntry(Labels.INSTANCE, "0123456789abcdef");
    assertThat(layout.agent("172.30.0.2").labels())
        .containsEntry(Labels.INSTANCE, "0123456789abcdef")
        .containsAllEntriesOf(spec().labels());
    for (Manifest manifest : layout.plan(Isolation.GVISOR, "10.214.0.0/21").manifests()) {
      if (List.of("volume", "network", "container").contains(manifest.kind())) {
        @SuppressWarnings("unchecked")
        Map<String, String> labels =
            (Map<String, String>) ((Map<String, Object>) manifest.body()).get("Labels");
        assertThat(labels).as(manifest.name()).containsEntry(Labels.INSTANCE, "0123456789abcdef");
      }
    }
    assertThat(LAYOUT.proxy("172.30.0.2").labels())
        .as("without an instance")
        .doesNotContainKey(Labels.INSTANCE);
    assertThatThrownBy(
            () -> DockerBackendConfig.defaults().toBuilder().instance("Not An Id").build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("instance must be 1-63 lower-case letters, digits and dashes");
  }

  @Test
  void thePlanNamesTheCredentialsButNeverTheirValues() throws Exception {
    SandboxPlan plan = WITH_CREDENTIALS.plan(Isolation.GVISOR, "10.214.0.0/21");
    String json = new ObjectMapper().writeValueAsString(plan);
    assertThat(json)
        .doesNotContain("jwt-SECRET-1")
        .doesNotContain("aws-SECRET-2")
        .contains("GATEWAY_TOKEN=<redacted>");
    JsonNode copy =
        new ObjectMapper()
            .valueToTree(
                plan.manifests().stream()
                    .filter(m -> m.kind().equals("credentials-copy"))
                    .findFirst()
                    .orElseThrow()
                    .body());
    assertThat(copy.get("Files"))
        .extracting(JsonNode::asText)
        .containsExactly("aws", "gateway-jwt");
    assertThat(copy.get("Mode").asText()).isEqualTo("0400");
    assertThat(copy.get("Owner").asText()).isEqualTo("65534:65534");
    assertThat(json).contains("\"Target\":\"/workspace\"");
  }

  @Test
  void theCredentialsArchiveHoldsOneReadOnlyFileEachOwnedByTheWorkloadUser() throws Exception {
    Map<String, String> found = new java.util.TreeMap<>();
    try (TarArchiveInputStream tar =
        new TarArchiveInputStream(
            new java.io.ByteArrayInputStream(WITH_CREDENTIALS.files().credentialsArchive()))) {
      for (TarArchiveEntry e = tar.getNextEntry(); e != null; e = tar.getNextEntry()) {
        assertThat(e.isFile()).as(e.getName()).isTrue();
        assertThat(e.getMode() & 07777).as(e.getName()).isEqualTo(0400);
        assertThat(e.getLongUserId()).isEqualTo(65534);
        assertThat(e.getLongGroupId()).isEqualTo(65534);
        found.put(e.getName(), new String(tar.readAllBytes(), StandardCharsets.UTF_8));
      }
    }
    assertThat(found)
        .containsExactly(
            Map.entry("aws", "aws-SECRET-2"), Map.entry("gateway-jwt", "jwt-SECRET-1"));
    try (TarArchiveInputStream tar =
        new TarArchiveInputStream(
            new java.io.ByteArrayInputStream(WITH_CREDENTIALS.files().outFolderArchive()))) {
      TarArchiveEntry out = tar.getNextEntry();
      assertThat(out.getName()).isEqualTo("out/");
      assertThat(out.isDirectory()).isTrue();
      assertThat(out.getMode() & 07777).isEqualTo(0700);
      assertThat(out.getLongUserId()).isEqualTo(65534);
      assertThat(tar.getNextEntry()).isNull();
    }
  }

  @Test
  void theProxyIsGivenTheRunsEffectivePolicyAsItsDocumentedJson() throws Exception {
    JsonNode policy = new ObjectMapper().readTree(LAYOUT.proxyPolicyJson("10.214.0.2"));
    assertThat(policy.get("listen").asText())
        .as("its fence address only, never every address (the egress side too)")
        .isEqualTo("10.214.0.2:3128");
    assertThat(policy.get("allow"))
        .extracting(JsonNode::asText)
        .containsExactlyInAnyOrder("api.example.com", "*.pypi.org:8443");
    assertThat(policy.get("instance_allow"))
        .extracting(JsonNode::asText)
        .containsExactlyInAnyOrder("*.example.com", "*.pypi.org:8443");
    assertThat(policy.get("internal").toString())
        .isEqualTo("[{\"cidr\":\"10.20.0.0/16\",\"ports\":[443]}]");
    assertThat(policy.get("hosts").get("mirror.internal.example.com").get(0).asText())
        .isEqualTo("10.20.0.5");
    assertThat(policy.get("run_id").asText()).isEqualTo("r1");
    assertThat(policy.get("decisions").asText()).isEqualTo("-");
  }

  @Test
  void anUnrestrictedInstancePolicyIsNull() throws Exception {
    RunSpec open = spec();
    RunSpec unrestricted =
        new RunSpec(
            open.runId(),
            open.agent(),
            open.image(),
            open.command(),
            open.env(),
            new RunEgress(open.egress().allow(), Optional.empty(), List.of(), Map.of()),
            open.resources(),
            open.ttl(),
            open.expiresAt(),
            false);
    JsonNode policy =
        new ObjectMapper()
            .readTree(
                new RunLayout(unrestricted, DockerBackendConfig.defaults(), "runc")
                    .proxyPolicyJson("10.214.0.2"));
    assertThat(policy.get("instance_allow").isNull()).isTrue();
  }

  @Test
  void thePlanSaysWhereEachNetworksBlockComesFromAndWhereTheProxyListens() {
    SandboxPlan plan = LAYOUT.plan(Isolation.GVISOR, "10.213.0.0/16");
    for (Manifest manifest : plan.manifests()) {
      if (manifest.kind().equals("network")) {
        assertThat(((Map<?, ?>) manifest.body()).get("IPAM").toString())
            .as(manifest.name())
            .contains("<a free /28 of 10.213.0.0/16>");
      }
    }
    Map<?, ?> proxy =
        (Map<?, ?>)
            plan.manifests().stream()
                .filter(m -> m.name().equals("asb-r1-proxy"))
                .findFirst()
                .orElseThrow()
                .body();
    assertThat(proxy.get("NetworkingConfig").toString())
        .contains("asb-r1-fence")
        .contains("IPv4Address=<proxy-ip>");
    assertThat(proxy.get("Env").toString()).contains("\"listen\":\"<proxy-ip>:3128\"");
  }
}
