package dev.agentsandbox.backend.docker;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * What the fence tests stand up on this host, and only here: dummy (or empty bridge) interfaces
 * carrying an "upstream" address and the metadata address 169.254.169.254, with HTTP listeners
 * behind them, and a host service on every address. No traffic ever goes to a real outside address.
 */
final class HostDrill implements AutoCloseable {
  static final String UPSTREAM_ADDRESS = "198.18.77.1";
  static final String UPSTREAM_CIDR = "198.18.77.0/24";
  static final String METADATA_ADDRESS = "169.254.169.254";
  private static final String UPSTREAM_LINK = "asb-up0";
  private static final String METADATA_LINK = "asb-meta0";

  final HttpServer upstream;
  final HttpServer metadata;
  final HttpServer hostService;
  private final List<String> links = new ArrayList<>();

  private HostDrill(HttpServer upstream, HttpServer metadata, HttpServer hostService) {
    this.upstream = upstream;
    this.metadata = metadata;
    this.hostService = hostService;
  }

  /** Whether this process may add interfaces (root, and {@code ip} exists). */
  static boolean possible() {
    try {
      Process id = new ProcessBuilder("id", "-u").redirectErrorStream(true).start();
      String uid = new String(id.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
      return id.waitFor(10, TimeUnit.SECONDS) && uid.equals("0") && run("ip", "-V") == 0;
    } catch (IOException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  static HostDrill start() throws IOException, InterruptedException {
    List<String> created = new ArrayList<>();
    try {
      addDummy(UPSTREAM_LINK, UPSTREAM_ADDRESS, created);
      addDummy(METADATA_LINK, METADATA_ADDRESS, created);
      HostDrill drill =
          new HostDrill(
              serve(UPSTREAM_ADDRESS, "hello from upstream"),
              serve(METADATA_ADDRESS, "metadata-secret"),
              // "::" is dual-stack on Linux: the host service answers on IPv4 and IPv6 alike.
              serve("::", "host-service"));
      drill.links.addAll(created);
      return drill;
    } catch (IOException | RuntimeException e) {
      for (String link : created) {
        run("ip", "link", "del", link);
      }
      throw e;
    }
  }

  /**
   * Adds {@code link} (dummy, or an empty bridge) carrying {@code address}/32, noted in created.
   */
  static void addDummy(String link, String address, List<String> created)
      throws IOException, InterruptedException {
    // A leftover from an aborted run is ours by name; replace it.
    run("ip", "link", "del", link);
    // A dummy interface where the kernel has the driver; this project's VMs lack it, and a bridge
    // without ports serves the same purpose: an address of this host that nothing else carries.
    if (run("ip", "link", "add", link, "type", "dummy") != 0) {
      check(run("ip", "link", "add", link, "type", "bridge"), "ip link add " + link);
    }
    created.add(link);
    check(run("ip", "addr", "add", address + "/32", "dev", link), "ip addr add " + address);
    check(run("ip", "link", "set", link, "up"), "ip link set " + link + " up");
  }

  private static HttpServer serve(String address, String body) throws IOException {
    HttpServer server =
        HttpServer.create(new InetSocketAddress(InetAddress.getByName(address), 0), 16);
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    server.createContext(
        "/",
        exchange -> {
          exchange.sendResponseHeaders(200, bytes.length);
          exchange.getResponseBody().write(bytes);
          exchange.close();
        });
    server.start();
    return server;
  }

  /** Every IPv4 address of this host but loopback and the drill's own. */
  static List<String> hostAddresses() throws IOException {
    List<String> addresses = new ArrayList<>();
    for (NetworkInterface nic : Collections.list(NetworkInterface.getNetworkInterfaces())) {
      if (nic.isLoopback()
          || nic.getName().equals(UPSTREAM_LINK)
          || nic.getName().equals(METADATA_LINK)) {
        continue;
      }
      for (InetAddress address : Collections.list(nic.getInetAddresses())) {
        if (address instanceof Inet4Address) {
          addresses.add(address.getHostAddress());
        }
      }
    }
    return addresses;
  }

  /** The IPv6 link-local address the host holds on a bridge interface, if any. */
  static java.util.Optional<String> linkLocalOn(String interfaceName) throws IOException {
    NetworkInterface nic = NetworkInterface.getByName(interfaceName);
    if (nic == null) {
      return java.util.Optional.empty();
    }
    return Collections.list(nic.getInetAddresses()).stream()
        .filter(a -> a instanceof java.net.Inet6Address && a.isLinkLocalAddress())
        .map(a -> a.getHostAddress().replaceAll("%.*", ""))
        .findFirst();
  }

  /** Runs a program on the host and returns its exit status and output. */
  static String output(String... command) throws IOException, InterruptedException {
    Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
    String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!process.waitFor(30, TimeUnit.SECONDS)) {
      process.destroyForcibly();
    }
    return out;
  }

  static int run(String... command) throws IOException, InterruptedException {
    Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
    process.getInputStream().readAllBytes();
    if (!process.waitFor(30, TimeUnit.SECONDS)) {
      process.destroyForcibly();
      return -1;
    }
    return process.exitValue();
  }

  private static void check(int status, String what) throws IOException {
    if (status != 0) {
      throw new IOException(what + " failed with status " + status);
    }
  }

  @Override
  public void close() throws IOException, InterruptedException {
    upstream.stop(0);
    metadata.stop(0);
    hostService.stop(0);
    for (String link : links) {
      run("ip", "link", "del", link);
    }
  }
}
