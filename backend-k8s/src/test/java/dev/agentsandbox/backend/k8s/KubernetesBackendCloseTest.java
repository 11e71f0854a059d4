package dev.agentsandbox.backend.k8s;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import java.time.Clock;
import org.junit.jupiter.api.Test;

/**
 * The backend owns the client it is given: closing the backend (at the server's close) closes it.
 */
class KubernetesBackendCloseTest {
  @Test
  void closingTheBackendClosesItsClient() {
    // A client is made without connecting; this one names a port nothing listens on and is never
    // used for a request.
    KubernetesClient client =
        new KubernetesClientBuilder()
            .withConfig(new ConfigBuilder().withMasterUrl("https://127.0.0.1:1").build())
            .build();
    KubernetesBackend backend = new KubernetesBackend(client, Specs.config(), Clock.systemUTC());
    assertThat(client.getHttpClient().isClosed()).isFalse();

    backend.close();

    assertThat(client.getHttpClient().isClosed()).isTrue();
  }
}
