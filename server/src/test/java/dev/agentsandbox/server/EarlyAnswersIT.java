package dev.agentsandbox.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.agentsandbox.testing.api.OpenApiContract;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Early answers (401, 403, 413, 415) reach real clients that send a large body before they read:
 * Python's urllib writes its whole body first, so a server that answers and closes with the body
 * unread resets the connection and urllib reports "Connection reset by peer" instead of the status;
 * curl reads while it sends. Each row runs one client {@value #ROUNDS} times against the real
 * server on loopback, and nothing may be written.
 */
class EarlyAnswersIT {
  static final int ROUNDS = 10;
  private static final int MIB = 1024 * 1024;
  private static final String CONFIG = "/api/admin/platform/agent-sandbox";

  @TempDir static Path dir;
  private static ApiFixture api;

  /** Sends the same PUT ROUNDS times and prints each status (or the error) on its own line. */
  private static final String URLLIB =
      """
      import sys, urllib.request, urllib.error
      url, token, size, ctype, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
      body = b'{"pad":"' + b'x' * (size - 10) + b'"}'
      headers = {"Content-Type": ctype}
      if token != "-":
          headers["Authorization"] = "Bearer " + token
      for _ in range(rounds):
          request = urllib.request.Request(url, data=body, method="PUT", headers=headers)
          try:
              with urllib.request.urlopen(request, timeout=30) as answer:
                  print(answer.status)
          except urllib.error.HTTPError as e:
              print(e.code)
          except Exception as e:
              print("error", type(e).__name__, e)
      """;

  @BeforeAll
  static void start() throws Exception {
    api = new ApiFixture("jdbc:sqlite:" + dir.resolve("store.db"));
  }

  @AfterAll
  static void stop() {
    if (api != null) {
      api.close();
    }
  }

  /** Who sends the request, and the token it holds. */
  enum Caller {
    ADMIN,
    READER,
    NOBODY
  }

  static Stream<Arguments> rows() {
    List<Arguments> rows = new ArrayList<>();
    for (String client : List.of("urllib", "curl")) {
      rows.add(
          Arguments.of(
              client, "413 for a 5 MiB body", Caller.ADMIN, 5 * MIB, "application/json", 413));
      rows.add(
          Arguments.of(
              client,
              "401 for a 5 MiB body without a token",
              Caller.NOBODY,
              5 * MIB,
              "application/json",
              401));
      rows.add(
          Arguments.of(
              client,
              "403 for a 5 MiB body from a read-only token",
              Caller.READER,
              5 * MIB,
              "application/json",
              403));
      rows.add(
          Arguments.of(
              client, "413 for a 20 MiB body", Caller.ADMIN, 20 * MIB, "application/json", 413));
      rows.add(
          Arguments.of(
              client,
              "415 for a 900 KiB text/plain body",
              Caller.ADMIN,
              900 * 1024,
              "text/plain",
              415));
    }
    return rows.stream();
  }

  @ParameterizedTest(name = "{0}: {1}")
  @MethodSource("rows")
  void theClientReadsTheAnswer(
      String client, String what, Caller caller, int size, String contentType, int expected)
      throws Exception {
    String token =
        switch (caller) {
          case ADMIN -> api.admin;
          case READER -> api.reader;
          case NOBODY -> "-";
        };
    String before = api.client.get(CONFIG, api.admin).body();
    // Not the checked client: how urllib and curl themselves send a large body is the point.
    List<String> statuses =
        client.equals("urllib") ? urllib(token, size, contentType) : curl(token, size, contentType);
    assertThat(statuses)
        .as("%s, %d rounds", what, ROUNDS)
        .hasSize(ROUNDS)
        .containsOnly(String.valueOf(expected));
    // What they were answered, as far as they report it (the status), against openapi.json.
    OpenApiContract.document()
        .check(
            new OpenApiContract.Exchange(
                "PUT", CONFIG, null, contentType, null, expected, null, null));
    assertThat(api.client.get(CONFIG, api.admin).body()).as("nothing written").isEqualTo(before);
  }

  private static List<String> urllib(String token, int size, String contentType) throws Exception {
    return run(
        List.of(
            "python3",
            "-c",
            URLLIB,
            api.server.baseUrl() + CONFIG,
            token,
            String.valueOf(size),
            contentType,
            String.valueOf(ROUNDS)));
  }

  private static List<String> curl(String token, int size, String contentType) throws Exception {
    Path body = dir.resolve("body-" + size);
    if (!Files.exists(body)) {
      String json = "{\"pad\":\"" + "x".repeat(size - 10) + "\"}";
      Files.writeString(body, json, StandardCharsets.US_ASCII);
    }
    List<String> statuses = new ArrayList<>();
    for (int i = 0; i < ROUNDS; i++) {
      List<String> command = new ArrayList<>(List.of("curl", "-sS", "-o", "/dev/null"));
      command.addAll(List.of("-w", "%{http_code}\\n", "-X", "PUT", "--max-time", "30"));
      command.addAll(List.of("-H", "Content-Type: " + contentType));
      if (!token.equals("-")) {
        command.addAll(List.of("-H", "Authorization: Bearer " + token));
      }
      command.addAll(List.of("--data-binary", "@" + body, api.server.baseUrl() + CONFIG));
      statuses.addAll(run(command));
    }
    return statuses;
  }

  private static List<String> run(List<String> command) throws IOException, InterruptedException {
    Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
    String output;
    try (var in = process.getInputStream()) {
      output = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    if (!process.waitFor(120, TimeUnit.SECONDS)) {
      process.destroyForcibly();
      throw new AssertionError(command.get(0) + " did not finish within 120 s");
    }
    List<String> lines = new ArrayList<>();
    for (String line : output.split("\n")) {
      if (!line.isBlank()) {
        lines.add(line.strip());
      }
    }
    return Collections.unmodifiableList(lines);
  }
}
