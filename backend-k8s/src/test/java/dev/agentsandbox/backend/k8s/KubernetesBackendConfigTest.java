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
    assertChangedOnly(BASE.toBuilder().requireRuntimeClass(true).build(), "requireRuntimeClass");
    assertChangedOnly(BASE.toBuilder().dualStack(true).build(), "dualStack");
    assertChangedOnly(
        BASE.toBuilder()
            .proxyReadyTimeout(Duration.ofSeconds(7))
            .pollInterval(Duration.ofMillis(20))
            .build(),
        "proxyReadyTimeout",
        "pollInterval");
    assertChangedOnly(
        BASE.toBuilder().trustedRuntimeHandlers(List.of("runsc", "kata")).build(),
        "trustedRuntimeHandlers");
    assertChangedOnly(
        BASE.toBuilder()
            .probeTimeout(Duration.ofMillis(200))
            .probeCacheTtl(Duration.ofSeconds(3))
            .build(),
        "probeTimeout",
        "probeCacheTtl");
    assertChangedOnly(
        BASE.toBuilder()
            .nodeCidrs(List.of("192.0.2.0/24"))
            .apiServerCidrs(List.of("198.51.100.7/32"))
            .build(),
        "nodeCidrs",
        "apiServerCidrs");
    assertChangedOnly(
        BASE.toBuilder()
            .sessions(
                new SessionSettings(
                    7445,
                    7446,
                    SessionSettings.DEFAULT.controlPlanePodLabels(),
                    Duration.ofSeconds(30)))
            .build(),
        "sessions");
    assertThat(
            BASE.toBuilder()
                .proxyReadyTimeout(Duration.ofSeconds(7))
                .pollInterval(Duration.ofMillis(20))
                .build()
                .pollInterval())
        .isEqualTo(Duration.ofMillis(20));
  }

  @Test
  void aCopyIsValidatedLikeANewConfig() {
    assertThatThrownBy(
            () ->
                BASE.toBuilder()
                    .proxyReadyTimeout(Duration.ZERO)
                    .pollInterval(Duration.ofSeconds(1))
                    .build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("proxyReadyTimeout must be positive");
    assertThatThrownBy(() -> BASE.toBuilder().trustedRuntimeHandlers(List.of()).build())
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
