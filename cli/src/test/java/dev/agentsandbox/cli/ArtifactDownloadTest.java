package dev.agentsandbox.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import picocli.CommandLine;

/**
 * {@code artifacts get} against a hostile server on loopback: a real HTTP server that lists names
 * meant to escape the folder and sends bytes that do not match the listing. Each row tries one way
 * around the download's rules; none may write outside the folder or leave a file it refused.
 */
class ArtifactDownloadTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String RUN = "aaaaaaaaaaaaaaaaaaaa";

  @TempDir Path tmp;
  private Path out;
  private Path outside;
  private HttpServer server;

  /** What the hostile server lists, and for each path what it sends and announces. */
  private volatile List<Map<String, Object>> listing = List.of();

  private volatile Map<String, byte[]> bodies = Map.of();
  private volatile Map<String, String> announced = Map.of();

  @BeforeEach
  void start() throws IOException {
    out = Files.createDirectories(tmp.resolve("parent").resolve("out"));
    outside = tmp.resolve("parent");
    Files.writeString(tmp.resolve("token"), "test-token\n");
    server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.createContext(AdminApi.RUNS + "/" + RUN + "/artifacts", this::serve);
    server.start();
  }

  @AfterEach
  void stop() {
    server.stop(0);
  }

  private void serve(HttpExchange exchange) throws IOException {
    URI uri = exchange.getRequestURI();
    byte[] body;
    if (uri.getPath().endsWith("/file")) {
      String path =
          URLDecoder.decode(uri.getRawQuery().substring("path=".length()), StandardCharsets.UTF_8);
      body = bodies.getOrDefault(path, new byte[0]);
      String hash = announced.get(path);
      if (hash != null) {
        exchange.getResponseHeaders().add("X-Agent-Sandbox-Sha256", hash);
      }
      exchange.getResponseHeaders().add("Content-Type", "application/octet-stream");
    } else {
      body = JSON.writeValueAsBytes(Map.of("run_id", RUN, "store", "folder", "artifacts", listing));
      exchange.getResponseHeaders().add("Content-Type", "application/json");
    }
    exchange.sendResponseHeaders(200, body.length);
    try (OutputStream stream = exchange.getResponseBody()) {
      stream.write(body);
    }
  }

  private void offer(String path, byte[] sent, String listedHash, long listedSize, String header) {
    listing = List.of(Map.of("path", path, "size", listedSize, "sha256", listedHash));
    bodies = Map.of(path, sent);
    announced = header == null ? Map.of() : Map.of(path, header);
  }

  private CommandLineTest.Run get(String... more) {
    CommandLine commandLine = Main.commandLine();
    ArtifactsCommand.Get get =
        commandLine.getSubcommands().get("artifacts").getSubcommands().get("get").getCommand();
    get.api.env = Map.of(Contexts.ENV, tmp.resolve("no-config.yaml").toString());
    List<String> args =
        new java.util.ArrayList<>(
            List.of(
                "artifacts",
                "get",
                RUN,
                "-o",
                out.toString(),
                "--url",
                "http://127.0.0.1:" + server.getAddress().getPort(),
                "--token-file",
                tmp.resolve("token").toString()));
    args.addAll(List.of(more));
    return CommandLineTest.run(commandLine, args.toArray(String[]::new));
  }

  static String sha256(byte[] bytes) throws Exception {
    return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
  }

  @Test
  void anArtifactWhoseHashMatchesIsSavedUnderItsPath() throws Exception {
    byte[] content = "{\"ok\": true}\n".getBytes(StandardCharsets.UTF_8);
    offer("reports/result.json", content, sha256(content), content.length, sha256(content));
    CommandLineTest.Run done = get();
    assertThat(done.exit()).as(done.err()).isZero();
    Path saved = out.toRealPath().resolve("reports/result.json");
    assertThat(done.out().strip()).isEqualTo(saved.toString());
    assertThat(Files.readAllBytes(saved)).isEqualTo(content);
    assertThat(leftovers()).containsExactly(saved);
  }

  static Stream<Arguments> escapes() {
    return Stream.of(
        Arguments.of("a parent segment", "../escaped.txt"),
        Arguments.of("parent segments deeper down", "sub/../../escaped.txt"),
        Arguments.of("an absolute path", "/tmp/escaped.txt"),
        Arguments.of("a backslash path", "..\\escaped.txt"),
        Arguments.of("a current-folder segment", "./escaped.txt"),
        Arguments.of("an empty segment", "sub//escaped.txt"),
        Arguments.of("a control character", "escaped\u001b[2J.txt"),
        Arguments.of("an empty name", ""));
  }

  @ParameterizedTest(name = "a name with {0} is refused and nothing is written")
  @MethodSource("escapes")
  void aNameThatCouldEscapeTheFolderIsRefused(String why, String name) throws Exception {
    byte[] content = "gotcha".getBytes(StandardCharsets.UTF_8);
    offer(name, content, sha256(content), content.length, sha256(content));
    CommandLineTest.Run done = get();
    assertThat(done.exit()).isEqualTo(Main.FAILED);
    assertThat(done.err()).contains("download artifact").contains("nothing written");
    assertThat(done.err()).doesNotContain("\u001b");
    assertThat(done.out()).isEmpty();
    assertThat(leftovers()).isEmpty();
    try (Stream<Path> all = Files.walk(tmp)) {
      assertThat(all.filter(p -> p.getFileName().toString().contains("escaped")))
          .as("nowhere under the test's folder")
          .isEmpty();
    }
  }

  @Test
  void aSymbolicLinkInTheFolderIsNotFollowed() throws Exception {
    Files.createSymbolicLink(out.resolve("link"), outside);
    byte[] content = "gotcha".getBytes(StandardCharsets.UTF_8);
    offer("link/escaped.txt", content, sha256(content), content.length, null);
    CommandLineTest.Run done = get();
    assertThat(done.exit()).isEqualTo(Main.FAILED);
    assertThat(done.err()).contains("is a symbolic link");
    assertThat(outside.resolve("escaped.txt")).doesNotExist();
  }

  static Stream<Arguments> mismatches() throws Exception {
    byte[] real = "the real plan\n".getBytes(StandardCharsets.UTF_8);
    byte[] forged = "a forged plan\n".getBytes(StandardCharsets.UTF_8);
    byte[] longer = "the real plan, and more\n".getBytes(StandardCharsets.UTF_8);
    byte[] shorter = "the real".getBytes(StandardCharsets.UTF_8);
    return Stream.of(
        Arguments.of(
            "other bytes of the same size",
            forged,
            sha256(real),
            real.length,
            sha256(forged),
            "its SHA-256 is"),
        Arguments.of(
            "more bytes than listed", longer, sha256(real), real.length, null, "more than"),
        Arguments.of(
            "fewer bytes than listed",
            shorter,
            sha256(real),
            real.length,
            null,
            "bytes arrived, the listing says"),
        Arguments.of(
            "a download announcing another hash",
            real,
            sha256(real),
            real.length,
            sha256(forged),
            "the download announced"),
        Arguments.of(
            "a listing without a hash", real, "not-a-hash", real.length, null, "no size or SHA"));
  }

  @ParameterizedTest(name = "{0}: refused, and the file is deleted")
  @MethodSource("mismatches")
  void aDownloadThatDoesNotMatchTheListingIsDeleted(
      String why, byte[] sent, String listedHash, long listedSize, String header, String said)
      throws Exception {
    offer("plan.txt", sent, listedHash, listedSize, header);
    CommandLineTest.Run done = get();
    assertThat(done.exit()).isEqualTo(Main.FAILED);
    assertThat(done.err()).contains(said).contains("1 of 1 artifacts of run " + RUN);
    assertThat(done.out()).isEmpty();
    assertThat(leftovers()).as("no file and no partial download left").isEmpty();
  }

  @Test
  void anExistingFileIsNeverReplaced() throws Exception {
    Files.writeString(out.resolve("plan.txt"), "mine");
    byte[] content = "theirs".getBytes(StandardCharsets.UTF_8);
    offer("plan.txt", content, sha256(content), content.length, null);
    CommandLineTest.Run done = get();
    assertThat(done.exit()).isEqualTo(Main.FAILED);
    assertThat(done.err()).contains("exists; it is not replaced");
    assertThat(Files.readString(out.resolve("plan.txt"))).isEqualTo("mine");
  }

  @Test
  void aNamedPathTakesThatArtifactOrTheFolderUnderIt() throws Exception {
    byte[] a = "a".getBytes(StandardCharsets.UTF_8);
    byte[] b = "b".getBytes(StandardCharsets.UTF_8);
    listing =
        List.of(
            Map.of("path", "logs/a.txt", "size", 1, "sha256", sha256(a)),
            Map.of("path", "logs-other.txt", "size", 1, "sha256", sha256(b)));
    bodies = Map.of("logs/a.txt", a, "logs-other.txt", b);
    announced = Map.of();
    CommandLineTest.Run folder = get("logs");
    assertThat(folder.exit()).as(folder.err()).isZero();
    assertThat(leftovers()).containsExactly(out.toRealPath().resolve("logs/a.txt"));
    CommandLineTest.Run missing = get("nothing.txt");
    assertThat(missing.exit()).isEqualTo(Main.FAILED);
    assertThat(missing.err()).contains("has no artifact nothing.txt");
  }

  /** Every regular file under the output folder. */
  private List<Path> leftovers() throws IOException {
    try (Stream<Path> files = Files.walk(out.toRealPath())) {
      return files.filter(Files::isRegularFile).toList();
    }
  }
}
