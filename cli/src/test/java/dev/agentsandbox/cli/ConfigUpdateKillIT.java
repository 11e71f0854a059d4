package dev.agentsandbox.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.agentsandbox.testing.api.ApiClient;
import java.io.IOException;
import java.net.http.HttpRequest;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Fault: the control plane is killed with SIGKILL while configuration updates are in flight. The
 * real packaged jar in its own process, two writers saving versions as fast as it answers, SIGKILL
 * by pid at a random moment, a restart on the same data directory; repeated. Each saved version
 * carries its own number in its content (agent {@code k}'s {@code ttl_seconds}), so a mix of two
 * versions shows. After each restart: the version is the last acknowledged one or the one in
 * flight, its content is its own, its audit row exists exactly once, and the chain verifies. 10
 * kills by default (CI's bound: each restart of the jar takes seconds); {@code
 * -Dasb.faults.kills=20} for more.
 */
class ConfigUpdateKillIT {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String CONFIG = "/api/admin/platform/agent-sandbox";
  private static final int KILLS = Integer.getInteger("asb.faults.kills", 10);
  private Process serve;

  @AfterEach
  void stop() throws InterruptedException {
    if (serve != null && serve.isAlive()) {
      serve.toHandle().destroyForcibly();
      serve.waitFor(60, TimeUnit.SECONDS);
    }
  }

  @Test
  void afterSigkillTheConfigurationIsTheOldOrTheNewVersionWithItsAuditRowNeverAMix()
      throws Exception {
    Path jar = Path.of("target", "agent-sandbox.jar");
    assertThat(jar).as("the packaged CLI jar (failsafe runs after package)").exists();
    Path data = Files.createTempDirectory("asb-config-kill-it");
    String db = "jdbc:sqlite:" + data.resolve("store.db");
    long acknowledged = 0;
    java.util.Queue<AssertionError> writerFailures =
        new java.util.concurrent.ConcurrentLinkedQueue<>();
    int inFlightSaved = 0;
    for (int kill = 0; kill < KILLS; kill++) {
      String base = startServe(jar, data, db);
      String token = Files.readString(data.resolve("admin-token"), StandardCharsets.UTF_8).strip();
      ApiClient api = new ApiClient(base);
      long version = checkConsistent(api, token, acknowledged);
      if (version == acknowledged + 1) {
        inFlightSaved++;
      }
      acknowledged = version;

      AtomicLong lastAcknowledged = new AtomicLong(version);
      AtomicInteger saves = new AtomicInteger();
      List<Thread> writers = new ArrayList<>();
      for (int w = 0; w < 2; w++) {
        writers.add(
            Thread.ofPlatform()
                .daemon()
                .start(
                    () -> {
                      try {
                        writeUntilRefused(api, token, lastAcknowledged, saves);
                      } catch (AssertionError e) {
                        writerFailures.add(e);
                      }
                    }));
      }
      // Let some saves through, then SIGKILL at a random point of the stream of updates.
      for (int i = 0; i < 400 && saves.get() < 3; i++) {
        Thread.sleep(25);
      }
      assertThat(saves.get()).as("saves before the kill").isGreaterThanOrEqualTo(3);
      Thread.sleep(ThreadLocalRandom.current().nextInt(0, 200));
      serve.toHandle().destroyForcibly(); // SIGKILL, by pid
      assertThat(serve.waitFor(30, TimeUnit.SECONDS)).isTrue();
      for (Thread writer : writers) {
        writer.join(Duration.ofSeconds(30));
        assertThat(writer.isAlive()).isFalse();
      }
      assertThat(writerFailures).isEmpty();
      acknowledged = lastAcknowledged.get();
    }
    String base = startServe(jar, data, db);
    String token = Files.readString(data.resolve("admin-token"), StandardCharsets.UTF_8).strip();
    long last = checkConsistent(new ApiClient(base), token, acknowledged);
    System.out.printf(
        "ConfigUpdateKillIT: %d kills, %d versions saved, %d times the update in flight at the"
            + " kill was kept%n",
        KILLS, last, inFlightSaved + (last == acknowledged + 1 ? 1 : 0));
  }

  /** Saves version after version until the server stops answering (it is killed). */
  private void writeUntilRefused(
      ApiClient api, String token, AtomicLong lastAcknowledged, AtomicInteger saves) {
    for (int i = 0; i < 100_000; i++) {
      try {
        ApiClient.Answer got = send(api, "GET", CONFIG, token, null, null);
        long current = JSON.readTree(got.body()).path("version").asLong();
        long next = current + 1;
        ApiClient.Answer put =
            send(
                api,
                "PUT",
                CONFIG,
                token,
                "\"" + current + "\"",
                """
                {"enabled": false, "reason": "v%d",
                 "agents": {"k": {"allow": ["v%d.example.test"], "ttl_seconds": %d}}}
                """
                    .formatted(next, next, next));
        if (put.status() == 200) {
          long saved = JSON.readTree(put.body()).path("version").asLong();
          assertThat(saved).isEqualTo(next);
          lastAcknowledged.accumulateAndGet(saved, Math::max);
          saves.incrementAndGet();
        } else {
          assertThat(put.status()).as(put.body()).isEqualTo(409);
        }
      } catch (IOException e) {
        return; // the server is gone
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }

  /**
   * The saved version is the last acknowledged one or the next (in flight at the kill), its content
   * is its own, versions 1..N each have exactly one audit row with that content, and the chain
   * verifies.
   */
  private long checkConsistent(ApiClient api, String token, long acknowledged) throws Exception {
    JsonNode config = JSON.readTree(send(api, "GET", CONFIG, token, null, null).body());
    long version = config.path("version").asLong();
    assertThat(version).as(config.toString()).isBetween(acknowledged, acknowledged + 1);
    if (version > 0) {
      assertThat(config.toString()).contains("v" + version + ".example.test");
      assertThat(config.toString()).doesNotContain("v" + (version + 1) + ".example.test");
      assertThat(findTtl(config)).as(config.toString()).isEqualTo(version);
    }
    List<Long> versions = new ArrayList<>();
    long after = 0;
    for (int page = 0; page < 100; page++) {
      JsonNode answer =
          JSON.readTree(
              send(
                      api,
                      "GET",
                      "/api/admin/platform/audit?type=agent_sandbox.config.update&limit=1000"
                          + "&after_id="
                          + after,
                      token,
                      null,
                      null)
                  .body());
      JsonNode rows = answer.path("rows");
      if (rows.isEmpty()) {
        break;
      }
      for (JsonNode row : rows) {
        long v = row.path("data").path("version").asLong();
        versions.add(v);
        assertThat(row.path("data").path("reason").asText()).isEqualTo("v" + v);
        assertThat(row.path("data").path("after").toString()).contains("v" + v + ".example.test");
        after = row.path("id").asLong();
      }
    }
    List<Long> expected = new ArrayList<>();
    for (long v = 1; v <= version; v++) {
      expected.add(v);
    }
    assertThat(versions).as("one audit row per saved version, in order").isEqualTo(expected);
    JsonNode verify =
        JSON.readTree(
            send(api, "GET", "/api/admin/platform/audit/verify", token, null, null).body());
    assertThat(verify.path("ok").asBoolean()).as(verify.toString()).isTrue();
    return version;
  }

  private static long findTtl(JsonNode config) {
    for (JsonNode node : List.of(config.path("config"), config)) {
      JsonNode ttl = node.path("agents").path("k").path("ttl_seconds");
      if (ttl.isNumber()) {
        return ttl.asLong();
      }
    }
    throw new AssertionError("no agents.k.ttl_seconds in " + config);
  }

  private String startServe(Path jar, Path data, String db)
      throws IOException, InterruptedException {
    String java = ProcessHandle.current().info().command().orElse("java");
    serve =
        new ProcessBuilder(
                java,
                "-jar",
                jar.toString(),
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--db",
                db,
                "--data-dir",
                data.toString(),
                "--instance-id",
                "config-kill-it",
                // No proxy pool: this test SIGKILLs serve, and a killed control plane's standbys
                // live until its store's next reaper pass (or their expiry, hours later); it runs
                // no sandbox anyway.
                "--docker-proxy-pool",
                "0")
            .redirectErrorStream(true)
            .start();
    return CliProcess.awaitListening(serve);
  }

  /** One checked exchange; a transport failure (the server killed) comes through. */
  private static ApiClient.Answer send(
      ApiClient api, String method, String path, String token, String ifMatch, String body)
      throws IOException, InterruptedException {
    HttpRequest.Builder request = api.builder(path, token);
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
    return api.exchange(request);
  }
}
