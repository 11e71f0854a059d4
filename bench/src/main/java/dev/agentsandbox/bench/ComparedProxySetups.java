package dev.agentsandbox.bench;

import java.nio.file.Path;
import java.util.List;

/**
 * Configuration text that gives every proxy the same allow-list: {@code a.bench.test} and {@code
 * b.bench.test} at the upstream's port, everything else refused, names resolved from one hosts file
 * that maps them (and the refused {@code c.bench.test}) to the upstream address.
 */
final class ComparedProxySetups {
  static final String ALLOWED_HOST = "a.bench.test";
  static final String OTHER_ALLOWED_HOST = "b.bench.test";
  static final String REFUSED_HOST = "c.bench.test";
  static final String UPSTREAM_ADDRESS = "127.0.0.2";

  private ComparedProxySetups() {}

  static String hostsFile() {
    return "127.0.0.1 localhost\n"
        + UPSTREAM_ADDRESS
        + " "
        + ALLOWED_HOST
        + " "
        + OTHER_ALLOWED_HOST
        + " "
        + REFUSED_HOST
        + "\n";
  }

  /** The {@code --allow} value for our proxy: both names, each with the upstream's port. */
  static String allowFlag(int upstreamPort) {
    return ALLOWED_HOST + ":" + upstreamPort + "," + OTHER_ALLOWED_HOST + ":" + upstreamPort;
  }

  static List<String> agentSandboxArguments(
      int listenPort, int upstreamPort, Path hostsFile, Path decisionsFile) {
    return List.of(
        "--listen",
        "127.0.0.1:" + listenPort,
        "--allow",
        allowFlag(upstreamPort),
        "--internal-cidr",
        UPSTREAM_ADDRESS + "/32:" + upstreamPort,
        "--hosts",
        hostsFile.toString(),
        "--decisions",
        decisionsFile.toString(),
        // Its default (1,024) is sized for one sandbox; the idle-tunnel stage holds 5,000, as
        // squid's descriptor limit and tinyproxy's MaxClients are raised for it too.
        "--max-connections",
        "8000");
  }

  /**
   * A non-caching squid with the allow-list as {@code dstdomain} plus port ACLs and a final {@code
   * deny all}. DNS is pointed at loopback so that nothing but the hosts file can answer, and
   * helpers that would add processes (pinger, disk cache) are off, so the one PID holds all the
   * work.
   */
  static String squid(int listenPort, int upstreamPort, Path workDir, Path hostsFile) {
    return """
        http_port 127.0.0.1:%1$d
        visible_hostname bench-squid
        pid_filename none
        cache_log %3$s/logs/squid-cache.log
        access_log stdio:%3$s/logs/squid-access.log
        coredump_dir %3$s
        cache deny all
        cache_mem 0 MB
        hosts_file %4$s
        dns_nameservers 127.0.0.1
        max_filedescriptors 20000
        pinger_enable off
        netdb_filename none
        shutdown_lifetime 0 seconds
        acl bench_hosts dstdomain %5$s %6$s
        acl SSL_ports port %2$d
        acl Safe_ports port %2$d
        acl CONNECT method CONNECT
        http_access deny !Safe_ports
        http_access deny CONNECT !SSL_ports
        http_access allow bench_hosts
        http_access deny all
        """
        .formatted(listenPort, upstreamPort, workDir, hostsFile, ALLOWED_HOST, OTHER_ALLOWED_HOST);
  }

  /**
   * tinyproxy with a default-deny domain filter and CONNECT limited to the upstream's port; it
   * resolves through the C library, so it runs with the hosts file bind-mounted over /etc/hosts in
   * its own mount namespace.
   */
  static String tinyproxy(int listenPort, int upstreamPort, Path workDir, Path filterFile) {
    return """
        User nobody
        Group nogroup
        Port %1$d
        Listen 127.0.0.1
        Timeout 600
        LogFile "%3$s/logs/tinyproxy.log"
        LogLevel Connect
        MaxClients 8000
        Allow 127.0.0.1
        Filter "%4$s"
        FilterType ere
        FilterURLs Off
        FilterDefaultDeny Yes
        ConnectPort %2$d
        """
        .formatted(listenPort, upstreamPort, workDir, filterFile);
  }

  static String tinyproxyFilter() {
    return "^"
        + ALLOWED_HOST.replace(".", "\\.")
        + "$\n^"
        + OTHER_ALLOWED_HOST.replace(".", "\\.")
        + "$\n";
  }
}
