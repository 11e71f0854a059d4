package dev.agentsandbox.testing;

import java.io.IOException;
import java.net.Inet6Address;
import java.net.NetworkInterface;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/** Programs and interfaces of this host, as the integration tests use them; every wait bounded. */
public final class Host {
  private static final long COMMAND_SECONDS = 30;

  private Host() {}

  /** Runs a program and returns its exit status (-1 if it did not end within 30 s). */
  public static int run(String... command) throws IOException, InterruptedException {
    Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
    process.getInputStream().readAllBytes();
    if (!process.waitFor(COMMAND_SECONDS, TimeUnit.SECONDS)) {
      process.destroyForcibly();
      return -1;
    }
    return process.exitValue();
  }

  /** Runs a program and returns its output, standard error included. */
  public static String output(String... command) throws IOException, InterruptedException {
    Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
    String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!process.waitFor(COMMAND_SECONDS, TimeUnit.SECONDS)) {
      process.destroyForcibly();
    }
    return out;
  }

  /** Whether this process may add interfaces (root, and {@code ip} exists). */
  public static boolean canAddLinks() {
    try {
      return output("id", "-u").strip().equals("0") && run("ip", "-V") == 0;
    } catch (IOException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  /**
   * Adds {@code link}, a dummy interface (or, where the kernel lacks the driver, a bridge without
   * ports) carrying {@code address}/32 and up: an address of this host that nothing else carries. A
   * leftover of that name from an aborted run is the tests' own, and is replaced.
   */
  public static void addLink(String link, String address) throws IOException, InterruptedException {
    deleteLink(link);
    if (run("ip", "link", "add", link, "type", "dummy") != 0) {
      check(run("ip", "link", "add", link, "type", "bridge"), "ip link add " + link);
    }
    try {
      check(run("ip", "addr", "add", address + "/32", "dev", link), "ip addr add " + address);
      check(run("ip", "link", "set", link, "up"), "ip link set " + link + " up");
    } catch (IOException e) {
      deleteLink(link);
      throw e;
    }
  }

  /** Removes {@code link} if it exists. */
  public static void deleteLink(String link) throws IOException, InterruptedException {
    run("ip", "link", "del", link);
  }

  /** The IPv6 link-local address the host holds on an interface, if any. */
  public static Optional<String> linkLocalOn(String interfaceName) throws IOException {
    NetworkInterface nic = NetworkInterface.getByName(interfaceName);
    if (nic == null) {
      return Optional.empty();
    }
    return Collections.list(nic.getInetAddresses()).stream()
        .filter(a -> a instanceof Inet6Address && a.isLinkLocalAddress())
        .map(a -> a.getHostAddress().replaceAll("%.*", ""))
        .findFirst();
  }

  private static void check(int status, String what) throws IOException {
    if (status != 0) {
      throw new IOException(what + " failed with status " + status + " (the ITs run as root)");
    }
  }
}
