package dev.agentsandbox.server.session;

import static org.assertj.core.api.Assertions.assertThat;

import com.github.dockerjava.api.DockerClient;
import dev.agentsandbox.backend.Labels;
import dev.agentsandbox.backend.docker.DockerBackend;
import dev.agentsandbox.backend.docker.DockerBackendConfig;
import dev.agentsandbox.backend.docker.DockerClients;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;

/**
 * {@link SessionEndToEndContract} on the real Docker backend as configured by default: under runsc
 * where the daemon has gVisor registered (CI's and this host's have), else runc; {@link
 * SessionDockerRuncIT} runs it under runc.
 */
class SessionDockerIT extends SessionEndToEndContract {
  private static DockerClient docker;

  @BeforeAll
  static void startOnDocker() throws Exception {
    DockerBackend backend = new DockerBackend(docker(), DockerBackendConfig.defaults());
    assertThat(backend.opensSessions()).as("the Docker backend opens sessions").isTrue();
    assertThat(backend.probe().available())
        .as("a Docker daemon (scripts/services/docker.sh start)")
        .isTrue();
    images();
    start(backend, SessionDockerIT::labelled, 900);
  }

  /** The images both runtimes' cases need; fails naming one when images/build.sh was not run. */
  static void images() {
    for (String image : List.of(IMAGE, DockerBackendConfig.DEFAULT_PROXY_IMAGE)) {
      docker().inspectImageCmd(image).exec();
    }
  }

  private static synchronized DockerClient docker() {
    if (docker == null) {
      docker = DockerClients.fromEnvironment();
    }
    return docker;
  }

  static List<String> labelled(String runId) {
    List<String> found = new ArrayList<>();
    docker()
        .listContainersCmd()
        .withShowAll(true)
        .withLabelFilter(Map.of(Labels.RUN_ID, runId))
        .exec()
        .forEach(c -> found.add("container " + String.join(",", c.getNames())));
    docker()
        .listNetworksCmd()
        .withFilter("label", List.of(Labels.RUN_ID + "=" + runId))
        .exec()
        .forEach(n -> found.add("network " + n.getName()));
    return found;
  }
}
