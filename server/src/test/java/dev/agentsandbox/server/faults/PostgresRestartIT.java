package dev.agentsandbox.server.faults;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.agentsandbox.policy.config.Scopes;
import dev.agentsandbox.server.AgentSandboxServer;
import dev.agentsandbox.store.Store;
import dev.agentsandbox.testing.api.ApiClient;
import dev.agentsandbox.testing.api.ApiClient.Answer;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.http.HttpRequest;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Fault: PostgreSQL restarted under load. A PostgreSQL server of the test's own (scripts/services/
 * postgres.sh on a port of its own, so that no other test's server is disturbed), a real control
 * plane on it, four clients reading and saving configuration versions; the server is halted and
 * started again while they run. During the outage every request is answered within the HTTP
 * client's bound with 503 {@code store_unavailable} and a plain message; once PostgreSQL is back
 * the same control plane serves again; every saved version has exactly one audit row and the chain
 * verifies.
 */
class PostgresRestartIT {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String CONFIG = "/api/admin/platform/agent-sandbox";
  private static final String PORT = "25491";
  private static final Path SCRIPT = Path.of("..", "scripts", "services", "postgres.sh");
  private static final Duration REQUEST_BOUND = Duration.ofSeconds(30);

  /** One request: when it started (which phase), how it was answered. */
  private record Outcome(int phaseAtStart, int phaseAtEnd, String what, int status, String body) {}

  @Test
  void requestsFailClearlyDuringTheOutageAndTheSameControlPlaneServesAfter() throws Exception {
    // The script's own data directory for this port (under /tmp, where its server user can reach
    // it); `stop` in the end removes it.
    Map<String, String> env = Map.of("AGENT_SANDBOX_PG_PORT", PORT);
    AtomicBoolean stop = new AtomicBoolean();
    List<Thread> clients = new ArrayList<>();
    try {
      String exported = script(env, "start");
      String url = exported.substring(exported.indexOf('\'') + 1, exported.lastIndexOf('\''));
      try (Store store = Store.open(url);
          AgentSandboxServer server =
              AgentSandboxServer.start(
                  new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), store)) {
        // Every exchange is checked against openapi.json; each request gives up after the bound.
        ApiClient api = new ApiClient(server.baseUrl(), REQUEST_BOUND);
        String token = store.tokens().create("it-admin", Scopes.ALL, null).secret();
        // 0 before the outage, 1 halting, 2 halted, 3 starting again, 4 ready again.
        AtomicInteger phase = new AtomicInteger();
        ConcurrentLinkedQueue<Outcome> outcomes = new ConcurrentLinkedQueue<>();
        ConcurrentLinkedQueue<Long> saved = new ConcurrentLinkedQueue<>();
        ConcurrentLinkedQueue<String> broken = new ConcurrentLinkedQueue<>();
        // What a load client's exchange failed on (the contract, above all): asserted at the end.
        ConcurrentLinkedQueue<Throwable> failed = new ConcurrentLinkedQueue<>();
        for (int c = 0; c < 4; c++) {
          clients.add(
              Thread.ofPlatform()
                  .daemon()
                  .start(() -> load(api, token, phase, stop, outcomes, saved, broken, failed)));
        }
        Thread.sleep(3000);
        assertThat(saved)
            .as("versions saved before the outage (load failures: %s)", failed)
            .isNotEmpty();

        phase.set(1);
        script(env, "halt");
        phase.set(2);
        // The pool waits up to its connection time-out (10 s) before it gives up on a request.
        Thread.sleep(15_000);
        Answer ready = send(api, "GET", "/readyz", null, null, null);
        assertThat(ready.status()).as(ready.body()).isEqualTo(503);
        assertThat(ready.body()).contains("store_unavailable");

        phase.set(3);
        script(env, "start");
        await("the same control plane to serve again")
            .atMost(Duration.ofSeconds(60))
            .pollInterval(Duration.ofMillis(250))
            .until(() -> send(api, "GET", "/readyz", null, null, null).status() == 200);
        phase.set(4);
        Thread.sleep(3000);
        stop.set(true);
        for (Thread client : clients) {
          client.join(REQUEST_BOUND.plusSeconds(10));
        }
        assertThat(failed).as("load requests that failed their checks").isEmpty();
        assertThat(broken).as("requests not answered within the bound").isEmpty();

        List<Outcome> all = new ArrayList<>(outcomes);
        List<Outcome> steady =
            all.stream().filter(o -> o.phaseAtStart() == 0 && o.phaseAtEnd() == 0).toList();
        List<Outcome> outage =
            all.stream().filter(o -> o.phaseAtStart() == 2 && o.phaseAtEnd() == 2).toList();
        List<Outcome> after = all.stream().filter(o -> o.phaseAtStart() == 4).toList();
        assertThat(steady).allSatisfy(o -> assertThat(o.status()).isIn(200, 409));
        assertThat(outage).as("requests made and answered during the outage").isNotEmpty();
        assertThat(outage)
            .allSatisfy(
                o -> {
                  assertThat(o.status()).as(o.toString()).isEqualTo(503);
                  JsonNode body = JSON.readTree(o.body());
                  assertThat(body.path("error").asText()).isEqualTo("store_unavailable");
                  assertThat(body.path("message").asText())
                      .isNotBlank()
                      .doesNotContain("Exception")
                      .doesNotContain("\tat ");
                });
        // Anything started while it was halting, or answered after the restart began: either.
        assertThat(all)
            .filteredOn(o -> o.phaseAtStart() >= 1 && o.phaseAtStart() <= 3)
            .allSatisfy(o -> assertThat(o.status()).as(o.toString()).isIn(200, 409, 503));
        assertThat(after).as("requests after the restart").isNotEmpty();
        assertThat(after).allSatisfy(o -> assertThat(o.status()).as(o.toString()).isIn(200, 409));

        // Nothing written twice: one audit row per version, each acknowledged version among them.
        long version =
            JSON.readTree(send(api, "GET", CONFIG, token, null, null).body())
                .path("version")
                .asLong();
        List<Long> versions = new ArrayList<>();
        long afterId = 0;
        for (int page = 0; page < 100; page++) {
          JsonNode rows =
              JSON.readTree(
                      send(
                              api,
                              "GET",
                              "/api/admin/platform/audit?type=agent_sandbox.config.update"
                                  + "&limit=1000&after_id="
                                  + afterId,
                              token,
                              null,
                              null)
                          .body())
                  .path("rows");
          if (rows.isEmpty()) {
            break;
          }
          for (JsonNode row : rows) {
            versions.add(row.path("data").path("version").asLong());
            afterId = row.path("id").asLong();
          }
        }
        List<Long> expected = new ArrayList<>();
        for (long v = 1; v <= version; v++) {
          expected.add(v);
        }
        assertThat(versions).isEqualTo(expected);
        Set<Long> acknowledged = new HashSet<>(saved);
        assertThat(acknowledged).hasSize(saved.size());
        assertThat(versions).containsAll(acknowledged);
        JsonNode verify =
            JSON.readTree(
                send(api, "GET", "/api/admin/platform/audit/verify", token, null, null).body());
        assertThat(verify.path("ok").asBoolean()).as(verify.toString()).isTrue();
        System.out.printf(
            "PostgresRestartIT: %d requests (%d before, %d answered during the outage, %d after"
                + " the restart), %d versions saved%n",
            all.size(), steady.size(), outage.size(), after.size(), version);
      }
    } finally {
      stop.set(true);
      for (Thread client : clients) {
        client.join(REQUEST_BOUND.plusSeconds(10));
      }
      script(env, "stop");
    }
  }

  private static void load(
      ApiClient client,
      String token,
      AtomicInteger phase,
      AtomicBoolean stop,
      ConcurrentLinkedQueue<Outcome> outcomes,
      ConcurrentLinkedQueue<Long> saved,
      ConcurrentLinkedQueue<String> broken,
      ConcurrentLinkedQueue<Throwable> failed) {
    for (int i = 0; i < 100_000 && !stop.get(); i++) {
      try {
        int at = phase.get();
        Answer got = send(client, "GET", CONFIG, token, null, null);
        outcomes.add(new Outcome(at, phase.get(), "GET", got.status(), got.body()));
        if (got.status() != 200) {
          continue;
        }
        long current = JSON.readTree(got.body()).path("version").asLong();
        at = phase.get();
        Answer put =
            send(
                client,
                "PUT",
                CONFIG,
                token,
                "\"" + current + "\"",
                """
                {"enabled": false, "reason": "load",
                 "agents": {"k": {"allow": ["v%d.example.test"]}}}
                """
                    .formatted(current + 1));
        outcomes.add(new Outcome(at, phase.get(), "PUT", put.status(), put.body()));
        if (put.status() == 200) {
          saved.add(JSON.readTree(put.body()).path("version").asLong());
        }
      } catch (IOException e) {
        broken.add(e.toString());
      } catch (AssertionError | RuntimeException e) {
        // A contract failure would otherwise end this thread unseen: kept for the test to assert.
        failed.add(e);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }

  private static String script(Map<String, String> env, String command)
      throws IOException, InterruptedException {
    ProcessBuilder builder = new ProcessBuilder("bash", SCRIPT.toString(), command);
    builder.environment().putAll(env);
    builder.redirectError(ProcessBuilder.Redirect.INHERIT);
    Process process = builder.start();
    String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!process.waitFor(120, TimeUnit.SECONDS)) {
      process.destroyForcibly();
      throw new AssertionError("postgres.sh " + command + " did not finish within 120 s");
    }
    assertThat(process.exitValue()).as("postgres.sh " + command).isZero();
    return out.strip();
  }

  /** One checked exchange; a transport failure (a time-out above all) is let through. */
  private static Answer send(
      ApiClient client, String method, String path, String token, String ifMatch, String body)
      throws IOException, InterruptedException {
    HttpRequest.Builder request = client.builder(path, token);
    if (ifMatch != null) {
      request.header("If-Match", ifMatch);
    }
    if (body == null) {
      request.method(method, HttpRequest.BodyPublishers.noBody());
    } else {
      request
          .header("Content-Type", "application/json")
          .method(method, HttpRequest.BodyPublishers.ofString(body));
    }
    return client.exchange(request);
  }
}
