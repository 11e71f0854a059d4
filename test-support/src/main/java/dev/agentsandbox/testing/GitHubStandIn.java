package dev.agentsandbox.testing;

import static java.nio.charset.StandardCharsets.UTF_8;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsServer;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * A loopback "GitHub" for the inspected-host tests of every backend, on this host only: a port-less
 * link carrying one address, and on it an HTTPS server for {@link #HOST} whose certificate comes
 * from a {@link TestAuthority} made for the test (what a run's proxy is told to trust as its {@code
 * upstream_ca}). It records every request with its {@code Authorization} header and answers {@code
 * GET /repos/acme/widgets} with {@link #body()}, anything else with {@code other PATH}.
 */
public final class GitHubStandIn implements AutoCloseable {
  /** The stand-in's host name, mapped to its address by the run's hosts table. */
  public static final String HOST = "api.github.test";

  /** The one path the tests' rules allow. */
  public static final String REPOSITORY = "/repos/acme/widgets";

  /** Where each backend's tests put it: link name, address, and the /32 declared internal. */
  public record Layout(String link, String address) {}

  /** The Docker backend's. */
  public static final Layout DOCKER = new Layout("asb-ghub0", "198.18.115.1");

  /** The microVM backend's. */
  public static final Layout MICROVM = new Layout("asbm-ghub0", "198.18.116.1");

  /** The control plane's end-to-end tests'. */
  public static final Layout SERVER = new Layout("asbs-ghub0", "198.18.117.1");

  /** One request as the stand-in saw it. */
  public record Seen(String method, String path, String authorization) {}

  /** The token the run's credential holds, drawn for this test. */
  public final String token;

  /** The authority whose certificate the stand-in presents. */
  public final TestAuthority authority;

  public final Layout layout;
  private final HttpsServer server;
  private final ExecutorService executor = Executors.newFixedThreadPool(4);
  private final List<Seen> seen = new CopyOnWriteArrayList<>();
  private final String marker;

  private GitHubStandIn(Layout layout) throws Exception {
    this.layout = layout;
    byte[] seed = new byte[12];
    new SecureRandom().nextBytes(seed);
    token = "ghs_" + HexFormat.of().formatHex(seed);
    new SecureRandom().nextBytes(seed);
    marker = HexFormat.of().formatHex(seed);
    authority = TestAuthority.create("agent-sandbox inspected-host test CA");
    server =
        HttpsServer.create(new InetSocketAddress(InetAddress.getByName(layout.address()), 0), 64);
    server.setHttpsConfigurator(new HttpsConfigurator(authority.serverContext(List.of(HOST))));
    server.setExecutor(executor);
    server.createContext("/", this::answer);
    server.start();
  }

  /** Adds the layout's link and serves there; {@link #close} removes both. */
  public static GitHubStandIn start(Layout layout) throws Exception {
    Host.addLink(layout.link(), layout.address());
    try {
      return new GitHubStandIn(layout);
    } catch (Exception e) {
      Host.deleteLink(layout.link());
      throw e;
    }
  }

  private void answer(HttpExchange exchange) throws IOException {
    try (InputStream in = exchange.getRequestBody()) {
      in.readAllBytes();
    }
    String path = exchange.getRequestURI().getRawPath();
    seen.add(
        new Seen(
            exchange.getRequestMethod(),
            path,
            exchange.getRequestHeaders().getFirst("Authorization")));
    boolean authorised =
        ("Bearer " + token).equals(exchange.getRequestHeaders().getFirst("Authorization"));
    byte[] answer;
    int status;
    if (!authorised) {
      status = 401;
      answer = "no valid token\n".getBytes(UTF_8);
    } else if (path.equals(REPOSITORY) && exchange.getRequestMethod().equals("GET")) {
      status = 200;
      answer = body().getBytes(UTF_8);
    } else {
      status = 200;
      answer = ("other " + path + "\n").getBytes(UTF_8);
    }
    exchange.getResponseHeaders().set("Content-Type", "text/plain");
    exchange.sendResponseHeaders(status, answer.length);
    exchange.getResponseBody().write(answer);
    exchange.close();
  }

  /** What an authorised GET of the repository answers: a line only this test's stand-in sends. */
  public String body() {
    return "acme/widgets " + marker + "\n";
  }

  public int port() {
    return server.getAddress().getPort();
  }

  /** {@code HOST:port}, as an allow-list entry and a URL's authority. */
  public String authority() {
    return HOST + ":" + port();
  }

  public List<Seen> seen() {
    return List.copyOf(seen);
  }

  @Override
  public void close() throws IOException, InterruptedException {
    server.stop(0);
    executor.shutdownNow();
    Host.deleteLink(layout.link());
  }
}
