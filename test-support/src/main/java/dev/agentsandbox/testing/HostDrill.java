package dev.agentsandbox.testing;

import java.io.IOException;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * What a fence test attacks, stood up on this host and only here: an "upstream" address from the
 * benchmarking range (198.18.0.0/15, never routed on the internet) and the metadata address
 * 169.254.169.254, each on its own port-less link with an HTTP listener behind it, and a host
 * service on every address. Each backend's tests use their own links and upstream address, so that
 * two modules' drills never meet.
 */
public final class HostDrill implements AutoCloseable {
  public static final String METADATA_ADDRESS = "169.254.169.254";

  /**
   * Where a drill lives.
   *
   * @param upstreamLink the upstream's link name (at most 15 characters)
   * @param metadataLink the metadata address's link name
   * @param upstreamAddress the upstream's address, inside 198.18.0.0/15
   * @param hostBind where the host service listens: "0.0.0.0", or "::" for both families
   */
  public record Layout(
      String upstreamLink, String metadataLink, String upstreamAddress, String hostBind) {}

  private final Layout layout;
  private final LinkServer upstream;
  private final LinkServer metadata;
  private final LinkServer hostService;

  private HostDrill(
      Layout layout, LinkServer upstream, LinkServer metadata, LinkServer hostService) {
    this.layout = layout;
    this.upstream = upstream;
    this.metadata = metadata;
    this.hostService = hostService;
  }

  /** Adds the links and starts the listeners; on failure removes what it added. */
  public static HostDrill start(Layout layout) throws IOException, InterruptedException {
    List<LinkServer> started = new ArrayList<>();
    try {
      started.add(
          LinkServer.onLink(
              layout.upstreamLink(), layout.upstreamAddress(), "hello from upstream"));
      started.add(LinkServer.onLink(layout.metadataLink(), METADATA_ADDRESS, "metadata-secret"));
      started.add(LinkServer.on(layout.hostBind(), "host-service"));
      return new HostDrill(layout, started.get(0), started.get(1), started.get(2));
    } catch (IOException | RuntimeException e) {
      for (LinkServer server : started) {
        server.close();
      }
      throw e;
    }
  }

  public String upstreamAddress() {
    return layout.upstreamAddress();
  }

  /** The /24 holding the upstream address, as a run's internal range names it. */
  public String upstreamCidr() {
    String address = layout.upstreamAddress();
    return address.substring(0, address.lastIndexOf('.')) + ".0/24";
  }

  public int upstreamPort() {
    return upstream.port();
  }

  public int metadataPort() {
    return metadata.port();
  }

  public int hostPort() {
    return hostService.port();
  }

  /** Every IPv4 address of this host but loopback and the drill's own. */
  public List<String> hostAddresses() throws IOException {
    List<String> addresses = new ArrayList<>();
    for (NetworkInterface nic : Collections.list(NetworkInterface.getNetworkInterfaces())) {
      if (nic.isLoopback()
          || nic.getName().equals(layout.upstreamLink())
          || nic.getName().equals(layout.metadataLink())) {
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

  @Override
  public void close() throws IOException, InterruptedException {
    upstream.close();
    metadata.close();
    hostService.close();
  }
}
