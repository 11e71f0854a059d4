package dev.agentsandbox.backend.docker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class DockerClientsTest {
  @Test
  void thePoolHoldsEveryLiveRunsLongLivedCallsWithRoomForLaunchesAndTeardowns() {
    // An idle session held five connections in the density bench; the pool must take the run
    // limit's worth of them and still launch and tear down, or the next open and every close wait
    // for a connection until they time out.
    for (int runs : new int[] {1, 16, 51, 100, 1024}) {
      assertThat(DockerClients.connectionsFor(runs))
          .as("%d runs", runs)
          .isGreaterThanOrEqualTo(runs * 5 + DockerClients.SPARE_CONNECTIONS)
          .isGreaterThanOrEqualTo(256);
    }
    assertThat(DockerClients.connectionsFor(16)).as("the default, as before").isEqualTo(256);
    assertThatThrownBy(() -> DockerClients.connectionsFor(0))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
