package dev.agentsandbox.server.faults;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.agentsandbox.policy.config.Scopes;
import dev.agentsandbox.server.AgentSandboxServer;
import dev.agentsandbox.store.Store;
import dev.agentsandbox.store.VerifyResult;
import dev.agentsandbox.testing.api.ApiClient;
import dev.agentsandbox.testing.api.ApiClient.Answer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Fault: the control plane's data disk is full. The SQLite store lives on a small tmpfs the test
 * mounts (as root) and fills; a configuration update then gets 507 {@code store_full} with a plain
 * message, the previous version and its audit rows stay as they were, the chain verifies, and once
 * space is freed the same control plane saves the update as the next version.
 */
class DiskFullIT {
  private static final String CONFIG = "/api/admin/platform/agent-sandbox";
  private ApiClient client;
  private String token;

  @Test
  void aFullDiskRefusesTheUpdateClearlyAndWritesNothingOfIt() throws Exception {
    Path mount = Files.createTempDirectory("asb-disk-full-it");
    run("mount", "-t", "tmpfs", "-o", "size=4m,mode=0700", "asb-disk-full-it", mount.toString());
    try {
      Path db = mount.resolve("store.db");
      Path filler = mount.resolve("filler");
      try (Store store = Store.open("jdbc:sqlite:" + db);
          AgentSandboxServer server =
              AgentSandboxServer.start(
                  new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), store)) {
        client = new ApiClient(server.baseUrl(), Duration.ofSeconds(30));
        token = store.tokens().create("it-admin", Scopes.ALL, null).secret();
        assertThat(put(0, config(1, 1)).status()).isEqualTo(200);
        assertThat(put(1, config(2, 1)).status()).isEqualTo(200);

        long filled = fill(filler);
        Answer refused = put(2, config(3, 150));
        assertThat(refused.status()).as(refused.body()).isEqualTo(507);
        JsonNode error = refused.json();
        assertThat(error.path("error").asText()).isEqualTo("store_full");
        assertThat(error.path("message").asText())
            .contains("disk is full")
            .doesNotContain("Exception")
            .doesNotContain("SQLITE");
        // Nothing of it: the same version, content and audit rows as before, a chain that verifies.
        assertUnchanged(2, store);
        assertThat(get("/healthz").status()).isEqualTo(200);

        Files.delete(filler);
        Answer saved = put(2, config(3, 150));
        assertThat(saved.status()).as(saved.body()).isEqualTo(200);
        assertThat(saved.json().path("version").asLong()).isEqualTo(3);
        assertUnchanged(3, store);
        System.out.printf("DiskFullIT: the filler took %d bytes of the 4 MiB tmpfs%n", filled);
      }
      // What is on the disk, read by a fresh store: the same three versions, an intact chain.
      try (Store reopened = Store.open("jdbc:sqlite:" + db)) {
        assertThat(reopened.configs().current("agent-sandbox").orElseThrow().version())
            .isEqualTo(3);
        VerifyResult verify = reopened.audit().verify();
        assertThat(verify.ok()).as(verify.problems().toString()).isTrue();
      }
    } finally {
      run("umount", "-l", mount.toString());
      Files.deleteIfExists(mount);
    }
  }

  /** Agent {@code k}'s allow-list names the version; {@code agents} agents make the size. */
  private static String config(long version, int agents) {
    StringBuilder json =
        new StringBuilder("{\"enabled\": false, \"reason\": \"v" + version + "\",");
    json.append("\"agents\": {\"k\": {\"allow\": [\"v").append(version).append(".example.test\"]}");
    for (int a = 0; a < agents - 1; a++) {
      json.append(", \"agent-").append(a).append("\": {\"allow\": [");
      for (int e = 0; e < 20; e++) {
        json.append(e == 0 ? "" : ", ")
            .append("\"host-")
            .append(a)
            .append('-')
            .append(e)
            .append(".padding.example.test\"");
      }
      json.append("]}");
    }
    return json.append("}}").toString();
  }

  private void assertUnchanged(long version, Store store) throws Exception {
    JsonNode config = get(CONFIG).json();
    assertThat(config.path("version").asLong()).isEqualTo(version);
    assertThat(config.toString())
        .contains("v" + version + ".example.test")
        .doesNotContain("v" + (version + 1) + ".example.test");
    JsonNode rows =
        get("/api/admin/platform/audit?type=agent_sandbox.config&limit=1000").json().path("rows");
    List<Long> versions = new ArrayList<>();
    rows.forEach(row -> versions.add(row.path("data").path("version").asLong()));
    List<Long> expected = new ArrayList<>();
    for (long v = 1; v <= version; v++) {
      expected.add(v);
    }
    assertThat(versions).as(rows.toString()).isEqualTo(expected);
    JsonNode verify = get("/api/admin/platform/audit/verify").json();
    assertThat(verify.path("ok").asBoolean()).as(verify.toString()).isTrue();
    assertThat(store.audit().verify().ok()).isTrue();
  }

  /** Writes until the file system refuses (bounded by its size); returns the bytes written. */
  private static long fill(Path filler) {
    byte[] chunk = new byte[16 * 1024];
    long written = 0;
    try (OutputStream out = Files.newOutputStream(filler)) {
      for (int i = 0; i < 1024; i++) {
        out.write(chunk);
        written += chunk.length;
      }
      out.flush();
    } catch (IOException e) {
      assertThat(e.getMessage()).contains("No space left on device");
      return written;
    }
    throw new AssertionError("a 4 MiB tmpfs took 16 MiB");
  }

  private Answer put(long ifMatch, String body) {
    return client.put(CONFIG, token, body, "If-Match", "\"" + ifMatch + "\"");
  }

  private Answer get(String path) {
    return client.get(path, token);
  }

  private static void run(String... command) throws IOException, InterruptedException {
    Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
    String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(process.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(process.exitValue()).as(String.join(" ", command) + ": " + out).isZero();
  }
}
