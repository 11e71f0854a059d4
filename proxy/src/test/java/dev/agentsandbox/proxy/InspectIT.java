package dev.agentsandbox.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.policy.event.DecisionRecord;
import dev.agentsandbox.policy.net.Reason;
import java.io.IOException;
import java.net.ProxySelector;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * An inspected host end to end, against a real loopback HTTPS "GitHub" with a certificate of a test
 * CA: a ruled GET is served with the credential the proxy injects, over HTTP/1.1 and HTTP/2; a POST
 * and another path are refused with their reasons; every request is a decision.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class InspectIT {
  private InspectWorld world;

  @BeforeAll
  void start() throws Exception {
    world = new InspectWorld();
  }

  @AfterAll
  void stop() throws IOException {
    world.close();
  }

  private HttpClient client(HttpClient.Version version) throws Exception {
    return HttpClient.newBuilder()
        .version(version)
        .proxy(ProxySelector.of(world.proxyAddress()))
        .sslContext(world.workloadTls())
        .connectTimeout(Duration.ofSeconds(10))
        .build();
  }

  private String url(String path) {
    return "https://" + world.apiTarget() + path;
  }

  @Test
  void aRuledGetIsServedWithTheInjectedCredentialOverHttp2AndHttp1() throws Exception {
    for (HttpClient.Version version :
        List.of(HttpClient.Version.HTTP_2, HttpClient.Version.HTTP_1_1)) {
      int before = world.api.seen().size();
      HttpResponse<String> answer =
          client(version)
              .send(
                  HttpRequest.newBuilder(URI.create(url("/repos/acme/widgets/contents/README.md")))
                      .header("Authorization", "Bearer proxy-managed")
                      .timeout(Duration.ofSeconds(20))
                      .build(),
                  HttpResponse.BodyHandlers.ofString());
      assertThat(answer.statusCode()).as(version + ": " + answer.body()).isEqualTo(200);
      assertThat(answer.version()).isEqualTo(version);
      assertThat(answer.body())
          .isEqualTo("hello from api at /repos/acme/widgets/contents/README.md");
      Upstream.Seen seen = world.api.seen().get(before);
      assertThat(seen.header("Authorization"))
          .as("the upstream got the injected token, not the workload's placeholder")
          .isEqualTo("Bearer " + InspectWorld.TOKEN);
      assertThat(seen.header("Host")).isEqualTo(world.apiTarget());
      DecisionRecord decision =
          world.decisions.await(
              d ->
                  d.method().equals("GET")
                      && "/repos/acme/widgets/contents/README.md".equals(d.path())
                      && d.allowed()
                      && d.time().isAfter(java.time.Instant.now().minusSeconds(30))
                      && d.status() != null);
      assertThat(decision.status()).isEqualTo(200);
      assertThat(decision.credential()).isEqualTo(InspectWorld.CREDENTIAL);
      assertThat(decision.host()).isEqualTo("api.test");
      assertThat(decision.bytesDown()).isEqualTo(answer.body().length());
    }
  }

  @Test
  void aPostAndAnotherPathAreRefusedWithTheirReasons() throws Exception {
    HttpClient client = client(HttpClient.Version.HTTP_2);
    int before = world.api.seen().size();
    HttpResponse<String> post =
        client.send(
            HttpRequest.newBuilder(URI.create(url("/repos/acme/widgets")))
                .POST(HttpRequest.BodyPublishers.ofString("{\"secret\": \"everything\"}"))
                .timeout(Duration.ofSeconds(20))
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(post.statusCode()).isEqualTo(403);
    assertThat(post.headers().firstValue(Refusals.DENIED_HEADER)).contains("path-not-allowed");
    HttpResponse<String> gist =
        client.send(
            HttpRequest.newBuilder(URI.create(url("/gists")))
                .timeout(Duration.ofSeconds(20))
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(gist.statusCode()).isEqualTo(403);
    assertThat(gist.headers().firstValue(Refusals.DENIED_HEADER)).contains("path-not-allowed");
    HttpResponse<String> delete =
        client.send(
            HttpRequest.newBuilder(URI.create(url("/repos/acme/widgets")))
                .DELETE()
                .timeout(Duration.ofSeconds(20))
                .build(),
            HttpResponse.BodyHandlers.ofString());
    assertThat(delete.statusCode()).isEqualTo(403);
    assertThat(delete.headers().firstValue(Refusals.DENIED_HEADER)).contains("method-not-allowed");
    assertThat(world.api.seen()).as("no refused request reached the upstream").hasSize(before);
    DecisionRecord refusal = world.decisions.await(d -> !d.allowed() && "/gists".equals(d.path()));
    assertThat(refusal.reason()).isEqualTo(Reason.PATH_NOT_ALLOWED);
    assertThat(refusal.method()).isEqualTo("GET");
    assertThat(world.decisions.await(d -> !d.allowed() && d.method().equals("DELETE")).reason())
        .isEqualTo(Reason.METHOD_NOT_ALLOWED);
  }

  @Test
  void curlOverHttp1AndHttp2WithTheRunCaAsItsBundle() throws Exception {
    for (String version : List.of("--http1.1", "--http2")) {
      List<String> command =
          new ArrayList<>(
              List.of(
                  Curl.path(),
                  "-sS",
                  version,
                  "--max-time",
                  "20",
                  "--proxy",
                  "http://127.0.0.1:" + world.proxyAddress().getPort(),
                  "--cacert",
                  world.runCaFile().toString(),
                  "--connect-to",
                  "::",
                  "-H",
                  "Authorization: Bearer proxy-managed",
                  "-w",
                  "\\n%{http_code} %{http_version}",
                  url("/repos/acme/widgets")));
      command.remove("--connect-to");
      command.remove("::");
      Process curl = new ProcessBuilder(command).redirectErrorStream(true).start();
      assertThat(curl.waitFor(30, TimeUnit.SECONDS)).isTrue();
      String out = new String(curl.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      assertThat(out).as(version).startsWith("hello from api at /repos/acme/widgets\n200 ");
      assertThat(out).as(version).endsWith(version.equals("--http2") ? " 2" : " 1.1");
    }
  }
}
