package dev.agentsandbox.policy.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.agentsandbox.policy.AllowList;
import dev.agentsandbox.policy.http.RequestRule;
import dev.agentsandbox.policy.http.RequestRules;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** The proxy policy document's {@code inspect} section: its shape, its checks, old documents. */
class InspectPolicyTest {
  private static final Instant END = Instant.parse("2026-12-01T10:15:00Z");
  private static final InspectedHost GITHUB =
      new InspectedHost(
          "api.github.com",
          Optional.of(new RequestRules(List.of(RequestRule.parse("GET,HEAD /repos/acme/**")))),
          Optional.of(Injection.of("github", "Authorization")));
  private static final RunEgress EGRESS =
      new RunEgress(
          AllowList.parse(List.of("api.github.com", "pypi.org")),
          Optional.empty(),
          List.of(),
          Map.of(),
          List.of(GITHUB),
          Optional.of("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"));

  @Test
  void aRunThatInspectsWritesTheSectionAndReadsItBack() {
    ProxyPolicy policy =
        ProxyPolicy.forRun(EGRESS, "run42", 3128, END, ProxyPolicy.PROXY_CREDENTIALS_DIR);
    Map<String, Object> tree = policy.toTree();
    assertThat(tree).containsKey("inspect");
    @SuppressWarnings("unchecked")
    Map<String, Object> inspect = (Map<String, Object>) tree.get("inspect");
    assertThat(inspect.keySet())
        .containsExactly("hosts", "ca_expires_at", "credentials_dir", "upstream_ca");
    assertThat(inspect.get("hosts"))
        .isEqualTo(
            Map.of(
                "api.github.com",
                Map.of(
                    "rules", List.of("GET,HEAD /repos/acme/**"),
                    "credential", "github",
                    "header", "Authorization",
                    "template", "Bearer {credential}")));
    assertThat(inspect).containsEntry("ca_expires_at", "2026-12-01T10:15:00Z");
    assertThat(ProxyPolicy.read(tree)).isEqualTo(policy);
  }

  @Test
  void theDocumentCarriesNoCredentialValueOnlyItsName() {
    Map<String, Object> tree =
        ProxyPolicy.forRun(EGRESS, "run42", 3128, END, ProxyPolicy.PROXY_CREDENTIALS_DIR).toTree();
    assertThat(tree.toString()).contains("github").doesNotContain("value");
  }

  @Test
  void aRunThatInspectsNothingWritesNoSectionSoAnOlderProxyStillReadsIt() {
    RunEgress plain =
        new RunEgress(AllowList.parse(List.of("pypi.org")), Optional.empty(), List.of(), Map.of());
    assertThat(ProxyPolicy.forRun(plain, "run42", 3128).toTree()).doesNotContainKey("inspect");
    assertThat(
            ProxyPolicy.forRun(plain, "run42", 3128, END, ProxyPolicy.PROXY_CREDENTIALS_DIR)
                .toTree())
        .doesNotContainKey("inspect");
  }

  @Test
  void theOldFactoryRefusesARunThatInspectsRatherThanDropTheRules() {
    assertThatThrownBy(() -> ProxyPolicy.forRun(EGRESS, "run42", 3128))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("inspects hosts");
  }

  @Test
  void anOlderDocumentWithoutTheSectionStillReads() {
    ProxyPolicy read =
        ProxyPolicy.read(Map.of("listen", "0.0.0.0:3128", "allow", List.of("pypi.org")));
    assertThat(read.inspect()).isEmpty();
  }

  private static Map<String, Object> withInspect(Object inspect) {
    Map<String, Object> doc = new LinkedHashMap<>();
    doc.put("listen", "0.0.0.0:3128");
    doc.put("allow", List.of("api.github.com"));
    doc.put("inspect", inspect);
    return doc;
  }

  static Stream<Arguments> refused() {
    Map<String, Object> injects = Map.of("api.github.com", Map.of("credential", "github"));
    return Stream.of(
        Arguments.of("not an object", List.of(), "inspect", "must be an object"),
        Arguments.of(
            "no hosts",
            Map.of("ca_expires_at", "2026-12-01T10:15:00Z"),
            "inspect.hosts",
            "required"),
        Arguments.of(
            "an empty host table",
            Map.of("hosts", Map.of(), "ca_expires_at", "2026-12-01T10:15:00Z"),
            "inspect.hosts",
            "at least one host"),
        Arguments.of(
            "no expiry",
            Map.of("hosts", Map.of("api.github.com", Map.of())),
            "inspect.ca_expires_at",
            "required"),
        Arguments.of(
            "an expiry that is no instant",
            Map.of("hosts", Map.of("api.github.com", Map.of()), "ca_expires_at", "tomorrow"),
            "inspect.ca_expires_at",
            "not an instant"),
        Arguments.of(
            "an injection without a credentials folder",
            Map.of("hosts", injects, "ca_expires_at", "2026-12-01T10:15:00Z"),
            "inspect.credentials_dir",
            "required"),
        Arguments.of(
            "a relative credentials folder",
            Map.of(
                "hosts",
                injects,
                "ca_expires_at",
                "2026-12-01T10:15:00Z",
                "credentials_dir",
                "creds"),
            "inspect.credentials_dir",
            "absolute"),
        Arguments.of(
            "a host the document's allow-list does not name",
            Map.of(
                "hosts",
                Map.of("gist.github.com", Map.of()),
                "ca_expires_at",
                "2026-12-01T10:15:00Z"),
            "inspect.hosts[\"gist.github.com\"]",
            "allow-list"),
        Arguments.of(
            "an upstream CA that is no PEM",
            Map.of(
                "hosts", Map.of("api.github.com", Map.of()),
                "ca_expires_at", "2026-12-01T10:15:00Z",
                "upstream_ca", "trust me"),
            "inspect.upstream_ca",
            "PEM"),
        Arguments.of(
            "an unknown field (a credential value is never part of the document)",
            Map.of(
                "hosts", Map.of("api.github.com", Map.of()),
                "ca_expires_at", "2026-12-01T10:15:00Z",
                "credentials", Map.of("github", "ghs_x")),
            "inspect.credentials",
            "unknown field"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("refused")
  void refusesEachProblemAtItsPath(String name, Object inspect, String path, String message) {
    assertThatThrownBy(() -> ProxyPolicy.read(withInspect(inspect)))
        .as(name)
        .isInstanceOfSatisfying(
            InvalidConfigException.class,
            e ->
                assertThat(e.problems())
                    .as(name)
                    .anySatisfy(
                        p -> {
                          assertThat(p.path()).isEqualTo(path);
                          assertThat(p.message()).contains(message);
                        }));
  }
}
