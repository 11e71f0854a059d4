package dev.agentsandbox.server.session;

import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.backend.docker.DockerBackend;
import dev.agentsandbox.backend.docker.DockerBackendConfig;
import dev.agentsandbox.backend.docker.DockerClients;
import java.time.Duration;
import org.junit.jupiter.api.BeforeAll;

/**
 * {@link SessionEndToEndContract} on the real Docker backend under runc, beside {@link
 * SessionDockerIT} under runsc where the daemon has gVisor registered: the gVisor runtime is named
 * as one the daemon does not have, so the backend launches under runc (as {@code RunContractIT}
 * does).
 */
class SessionDockerRuncIT extends SessionEndToEndContract {
  @BeforeAll
  static void startOnDockerUnderRunc() throws Exception {
    DockerBackendConfig runc =
        DockerBackendConfig.builder()
            .proxyImage(DockerBackendConfig.DEFAULT_PROXY_IMAGE)
            .proxyPort(3128)
            .workloadUser("65534:65534")
            .tmpfsMb(64)
            .proxyMemoryMb(256)
            .proxyReadyTimeout(Duration.ofSeconds(30))
            .gvisorRuntime("no-such-runtime")
            .build();
    DockerBackend backend = new DockerBackend(DockerClients.fromEnvironment(), runc);
    assertThat(backend.opensSessions()).as("the Docker backend opens sessions").isTrue();
    assertThat(backend.probe().available())
        .as("a Docker daemon (scripts/services/docker.sh start)")
        .isTrue();
    assertThat(backend.probe().runtime()).as("the runtime it launches under").isEqualTo("runc");
    SessionDockerIT.images();
    start(backend, SessionDockerIT::labelled, 900);
  }
}
