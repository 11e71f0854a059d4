package dev.agentsandbox.proxy;

import dev.agentsandbox.policy.HostName;
import dev.agentsandbox.policy.InvalidHostException;
import dev.agentsandbox.policy.net.IpLiteral;
import io.netty.channel.EventLoop;
import io.netty.util.concurrent.Future;
import java.io.IOException;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Resolves names from a fixed table instead of DNS ({@code --hosts FILE} or the policy file's
 * {@code hosts}), for tests and air-gapped sites. Names are canonicalized like request targets;
 * addresses must be strict IP literals.
 *
 * <p>Immutable and thread-safe.
 */
public final class StaticHostResolver implements HostResolver {
  private final Map<String, List<InetAddress>> table;

  /** A resolver answering exactly the given canonical names. */
  public StaticHostResolver(Map<String, List<InetAddress>> table) {
    this.table = Map.copyOf(table);
  }

  /**
   * Parses a hosts-format file: {@code address name [alias...]} per line, {@code #} comments. A
   * name listed on several lines gets all their addresses, in file order.
   *
   * @throws InvalidProxyConfigException naming the file, line and problem
   */
  public static Map<String, List<InetAddress>> parseHostsFile(Path file) {
    List<String> lines;
    try {
      lines = Files.readAllLines(file, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new InvalidProxyConfigException(
          "reading hosts file " + file + " failed: " + e.getMessage(), e);
    }
    Map<String, List<String>> raw = new LinkedHashMap<>();
    for (int i = 0; i < lines.size(); i++) {
      String line = lines.get(i);
      int hash = line.indexOf('#');
      String content = (hash >= 0 ? line.substring(0, hash) : line).strip();
      if (content.isEmpty()) {
        continue;
      }
      String[] fields = content.split("\\s+");
      if (fields.length < 2) {
        throw new InvalidProxyConfigException(
            "reading hosts file " + file + " line " + (i + 1) + ": expected 'address name...'");
      }
      for (int f = 1; f < fields.length; f++) {
        raw.computeIfAbsent(fields[f], k -> new ArrayList<>()).add(fields[0]);
      }
    }
    return parseTable(raw, "hosts file " + file);
  }

  /**
   * Validates a name-to-addresses table (the policy file's {@code hosts}).
   *
   * @throws InvalidProxyConfigException naming the bad name or address
   */
  public static Map<String, List<InetAddress>> parseTable(
      Map<String, List<String>> raw, String where) {
    Map<String, List<InetAddress>> table = new LinkedHashMap<>();
    for (Map.Entry<String, List<String>> entry : raw.entrySet()) {
      String name;
      try {
        name = HostName.canonicalTargetHost(entry.getKey());
      } catch (InvalidHostException e) {
        throw new InvalidProxyConfigException(
            "reading " + where + ": name '" + entry.getKey() + "': " + e.getMessage());
      }
      List<InetAddress> addresses = table.computeIfAbsent(name, k -> new ArrayList<>());
      for (String text : entry.getValue()) {
        try {
          addresses.add(IpLiteral.parseAddress(text));
        } catch (IllegalArgumentException e) {
          throw new InvalidProxyConfigException(
              "reading " + where + ": address for " + name + ": " + e.getMessage());
        }
      }
    }
    table.replaceAll((name, addresses) -> List.copyOf(addresses));
    return table;
  }

  @Override
  public Future<List<InetAddress>> resolve(String canonicalHost, EventLoop eventLoop) {
    List<InetAddress> addresses = table.get(canonicalHost);
    if (addresses == null || addresses.isEmpty()) {
      return eventLoop.newFailedFuture(
          new UnknownHostException(canonicalHost + " is not in the hosts table"));
    }
    return eventLoop.newSucceededFuture(addresses);
  }
}
