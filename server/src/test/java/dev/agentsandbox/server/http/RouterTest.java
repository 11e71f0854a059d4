package dev.agentsandbox.server.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

class RouterTest {
  private static final Handler NOTHING = request -> Response.json(204, new byte[0]);

  private final Router router =
      new Router(
          List.of(
              new Route("GET", "/api/runs", "agent_sandbox.read", NOTHING),
              new Route("POST", "/api/runs", "agent_sandbox.run", NOTHING),
              new Route("GET", "/api/runs/{id}", "agent_sandbox.read", NOTHING)));

  @Test
  void capturesAPathSegment() {
    Router.Match match = router.match("GET", "/api/runs/r-42");
    assertThat(match.route().path()).isEqualTo("/api/runs/{id}");
    assertThat(match.params()).containsEntry("id", "r-42");
  }

  @Test
  void aCaptureNeverMatchesAnEmptySegmentOrSeveralSegments() {
    assertThatThrownBy(() -> router.match("GET", "/api/runs/"))
        .isInstanceOfSatisfying(ApiException.class, e -> assertThat(e.status()).isEqualTo(404));
    assertThatThrownBy(() -> router.match("GET", "/api/runs/a/b"))
        .isInstanceOfSatisfying(ApiException.class, e -> assertThat(e.status()).isEqualTo(404));
  }

  @Test
  void theSamePathWithAnotherMethodIs405ListingTheAllowedOnes() {
    assertThatThrownBy(() -> router.match("DELETE", "/api/runs"))
        .isInstanceOfSatisfying(
            ApiException.class,
            e -> {
              assertThat(e.status()).isEqualTo(405);
              assertThat(e.details().get("allow")).isEqualTo(List.of("GET", "POST"));
            });
  }

  @Test
  void pathsMatchExactlyNotByPrefixOrCase() {
    assertThatThrownBy(() -> router.match("GET", "/api/runsx"))
        .isInstanceOfSatisfying(ApiException.class, e -> assertThat(e.status()).isEqualTo(404));
    assertThatThrownBy(() -> router.match("GET", "/API/runs"))
        .isInstanceOfSatisfying(ApiException.class, e -> assertThat(e.status()).isEqualTo(404));
  }
}
