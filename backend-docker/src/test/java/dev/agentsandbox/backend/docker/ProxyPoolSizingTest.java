package dev.agentsandbox.backend.docker;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** The automatic proxy pool's size by the daemon host's memory, as docs/backends/docker.md says. */
class ProxyPoolSizingTest {
  private static final long GIB = 1L << 30;

  static Stream<Arguments> hosts() {
    return Stream.of(
        Arguments.of("a host that reports no memory keeps no pool", 0L, 0),
        Arguments.of("a 2 GiB host keeps no pool", 2 * GIB, 0),
        Arguments.of("just under 4 GiB keeps no pool", 4 * GIB - 1, 0),
        Arguments.of("4 GiB keeps one standby", 4 * GIB, 1),
        Arguments.of("just under 8 GiB keeps one", 8 * GIB - 1, 1),
        Arguments.of("8 GiB keeps two", 8 * GIB, 2),
        Arguments.of("this project's 24 GiB VM keeps two", 24 * GIB, 2),
        Arguments.of("a 1 TiB host still keeps two: small is the point", 1024 * GIB, 2));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("hosts")
  void theAutomaticPoolIsWhatTheHostCanAfford(String name, long memory, int standbys) {
    assertThat(ProxyPoolSizing.forHostMemory(memory)).as(name).isEqualTo(standbys);
  }

  @Test
  void theExplanationNamesTheSizeTheMemoryAndTheOption() {
    assertThat(ProxyPoolSizing.explain(2, 24 * GIB))
        .isEqualTo(
            "2 standbys (automatic, for 24.0 GiB of host memory; --docker-proxy-pool N to"
                + " change)");
    assertThat(ProxyPoolSizing.explain(1, 5 * GIB)).startsWith("1 standby (");
  }
}
