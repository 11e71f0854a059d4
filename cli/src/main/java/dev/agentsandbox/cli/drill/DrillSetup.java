package dev.agentsandbox.cli.drill;

import dev.agentsandbox.policy.text.Bounded;
import java.util.List;
import java.util.regex.Pattern;

/**
 * What a drill attacks with and what the agent's limits are: everything the steps' scripts and
 * judgements depend on, recorded in the transcript so that {@code drill verify} judges the same.
 * Every value is checked here against a strict grammar: each becomes an argument of a step's script
 * ({@link DrillScript}: never part of its text) and a word in the transcript, and a host, address
 * or path that reads otherwise is an operator's mistake to refuse before anything runs.
 *
 * @param drillId the drill's id, a label on each of its runs
 * @param agent the agent the runs run as
 * @param unlistedHost a host name the agent's effective allow-list does not allow
 * @param outside an IPv4 address and port outside the sandbox that it must not reach directly
 * @param metadata the cloud metadata address and port
 * @param hostTargets addresses and ports of the host and its services (the gateway is found inside)
 * @param dnsName a name that resolves outside, which the sandbox must not be able to resolve
 * @param secretPaths paths that must not exist inside a sandbox
 * @param credentials the names of the credentials the agent's runs get (the only files allowed in
 *     the credentials folder)
 * @param pids the agent's process cap
 * @param memoryMb the agent's memory cap
 * @param ttlSeconds the agent's time to live
 */
record DrillSetup(
    String drillId,
    String agent,
    String unlistedHost,
    String outside,
    String metadata,
    List<String> hostTargets,
    String dnsName,
    List<String> secretPaths,
    List<String> credentials,
    int pids,
    int memoryMb,
    long ttlSeconds) {
  static final Pattern HOST = Pattern.compile("[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?");
  static final Pattern ADDRESS =
      Pattern.compile(
          "(25[0-5]|2[0-4][0-9]|1?[0-9]{1,2})(\\.(25[0-5]|2[0-4][0-9]|1?[0-9]{1,2})){3}");
  static final Pattern TARGET = Pattern.compile(ADDRESS.pattern() + ":[1-9][0-9]{0,4}");
  static final Pattern PATH = Pattern.compile("/[A-Za-z0-9._/-]{1,255}");
  private static final Pattern NAME = Pattern.compile("[a-z0-9][a-z0-9._-]{0,62}");

  /** The default paths that must not exist inside: the host's sockets and secrets. */
  static final List<String> DEFAULT_SECRET_PATHS =
      List.of(
          "/var/run/docker.sock",
          "/run/docker.sock",
          "/run/containerd/containerd.sock",
          "/var/lib/docker",
          "/var/lib/agent-sandbox",
          "/var/run/secrets/kubernetes.io/serviceaccount/token");

  DrillSetup {
    hostTargets = List.copyOf(hostTargets);
    secretPaths = List.copyOf(secretPaths);
    credentials = List.copyOf(credentials);
    require(NAME, drillId, "drill id");
    require(NAME, agent, "agent");
    require(HOST, unlistedHost, "--unlisted-host");
    require(TARGET, outside, "--outside");
    require(TARGET, metadata, "--metadata");
    hostTargets.forEach(t -> require(TARGET, t, "--host-target"));
    require(HOST, dnsName, "--dns-name");
    secretPaths.forEach(p -> require(PATH, p, "--secret-path"));
    credentials.forEach(c -> require(NAME, c, "credential name"));
    if (pids < 1 || memoryMb < 1 || ttlSeconds < 1) {
      throw new IllegalArgumentException("the agent's limits must be positive");
    }
  }

  private static void require(Pattern grammar, String value, String what) {
    if (value == null || !grammar.matcher(value).matches()) {
      throw new IllegalArgumentException(
          what
              + " "
              + (value == null
                  ? "(missing)"
                  : "'" + Bounded.text(value, 80, Bounded.Escape.PRINTABLE_ASCII) + "'")
              + ": expected "
              + (grammar == TARGET
                  ? "an IPv4 address and port such as 192.0.2.10:80"
                  : grammar == PATH
                      ? "an absolute path of letters, digits, . _ - and /"
                      : "lower-case letters, digits, dots and hyphens"));
    }
  }

  /** The address part of {@code address:port}. */
  static String address(String target) {
    return target.substring(0, target.lastIndexOf(':'));
  }

  /** The port part of {@code address:port}. */
  static int port(String target) {
    return Integer.parseInt(target.substring(target.lastIndexOf(':') + 1));
  }
}
