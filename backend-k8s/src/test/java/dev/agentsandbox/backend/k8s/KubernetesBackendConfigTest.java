package dev.agentsandbox.backend.k8s;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.reflect.RecordComponent;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/** Each with-er changes exactly the fields it names and validates the copy like a new config. */
class KubernetesBackendConfigTest {
  private static final KubernetesBackendConfig BASE =
      KubernetesBackendConfig.defaults("agent-sandbox/proxy:1.0", "agent-sandbox");

  @Test
  void eachWithChangesOnlyWhatItNames() throws Exception {
    assertChangedOnly(BASE.withRequireRuntimeClass(true), "requireRuntimeClass");
    assertChangedOnly(BASE.withDualStack(true), "dualStack");
    assertChangedOnly(
        BASE.withTimings(Duration.ofSeconds(7), Duration.ofMillis(20)),
        "proxyReadyTimeout",
        "pollInterval");
    assertChangedOnly(
        BASE.withTrustedRuntimeHandlers(List.of("runsc", "kata")), "trustedRuntimeHandlers");
    assertChangedOnly(
        BASE.withProbe(Duration.ofMillis(200), Duration.ofSeconds(3)),
        "probeTimeout",
        "probeCacheTtl");
    assertChangedOnly(
        BASE.withClusterCidrs(List.of("192.0.2.0/24"), List.of("198.51.100.7/32")),
        "nodeCidrs",
        "apiServerCidrs");
    assertThat(BASE.withTimings(Duration.ofSeconds(7), Duration.ofMillis(20)).pollInterval())
        .isEqualTo(Duration.ofMillis(20));
  }

  @Test
  void aCopyIsValidatedLikeANewConfig() {
    assertThatThrownBy(() -> BASE.withTimings(Duration.ZERO, Duration.ofSeconds(1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("proxyReadyTimeout must be positive");
    assertThatThrownBy(() -> BASE.withTrustedRuntimeHandlers(List.of()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("trustedRuntimeHandlers is empty");
  }

  private static void assertChangedOnly(KubernetesBackendConfig changed, String... names)
      throws Exception {
    Set<String> differing = new TreeSet<>();
    for (RecordComponent component : KubernetesBackendConfig.class.getRecordComponents()) {
      Object before = component.getAccessor().invoke(BASE);
      Object after = component.getAccessor().invoke(changed);
      if (!before.equals(after)) {
        differing.add(component.getName());
      }
    }
    assertThat(differing).containsExactlyInAnyOrder(names);
  }
}
