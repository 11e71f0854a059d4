package dev.agentsandbox.proxy;

import dev.agentsandbox.policy.config.ProxyLines;
import dev.agentsandbox.policy.net.IpLiteral;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/**
 * {@code agent-sandbox proxy}: runs one sandbox's egress proxy until the process is stopped.
 * Self-contained so the CLI can add it as a subcommand; exit code 2 with one line on stderr for bad
 * input, and one ready line on stderr once connections are accepted. Only the command line lives
 * here: the options are a {@link ProxyOptions} mixin, {@link ProxyAssembly} wires the parts, and
 * {@link RunningProxy} is the handle (and the API for starting a proxy in-process).
 */
@Command(
    name = "proxy",
    mixinStandardHelpOptions = true,
    description = "Run a sandbox's default-deny egress proxy (HTTP CONNECT and plain HTTP).")
public final class ProxyCommand implements Callable<Integer> {
  /** Exit code for bad input (command line or policy file). */
  public static final int EXIT_BAD_INPUT = 2;

  /** Exit code when the proxy could not start (port taken, metrics port taken). */
  public static final int EXIT_START_FAILED = 1;

  @Mixin ProxyOptions options = new ProxyOptions();

  /** The options as parsed, before validation. */
  ProxyOptions options() {
    return options;
  }

  /**
   * Netty's buffer allocator switches itself to a low-memory mode when the JVM's heap may not grow
   * past 512 MiB, as in the proxy's container (256 MiB, 70 % of it heap): every buffer larger than
   * its largest size class (16.5 KiB) is then allocated from the C heap and freed again instead of
   * being pooled, and a tunnel reads 64 KiB at a time, so every read of a bulk transfer paid for an
   * allocation, a cleaner and a free: more than half of the proxy's CPU per relayed GB
   * (docs/benchmarks.md, "Where the CONNECT path's time goes"). Pooling them costs no memory while
   * idle. Set before Netty's allocator is first used in this JVM (this command is the proxy's entry
   * point); an operator's own {@code -Dio.netty.allocator.lowMemory} wins.
   */
  static void poolLargeBuffers() {
    if (System.getProperty(LOW_MEMORY_PROPERTY) == null) {
      System.setProperty(LOW_MEMORY_PROPERTY, "false");
    }
  }

  static final String LOW_MEMORY_PROPERTY = "io.netty.allocator.lowMemory";

  /**
   * The CLI entry: starts the proxy, prints the ready line and serves until the process is asked to
   * stop (SIGTERM), when the process's one shutdown hook closes it.
   */
  @Override
  public Integer call() {
    poolLargeBuffers();
    PrintStream err = System.err;
    RunningProxy proxy;
    ProxyConfig config;
    boolean awaitPolicy = options().awaitPolicy;
    try {
      config = options().config();
      proxy =
          awaitPolicy
              ? RunningProxy.startAwaitingPolicy(config, List.of())
              : RunningProxy.start(config, List.of());
    } catch (InvalidProxyConfigException e) {
      err.println("agent-sandbox proxy: " + e.getMessage());
      return EXIT_BAD_INPUT;
    } catch (UnableToStartProxyException e) {
      err.println("agent-sandbox proxy: " + e.getMessage());
      return EXIT_START_FAILED;
    }
    try {
      ShutdownHook.closeOnExit(proxy);
      if (awaitPolicy) {
        err.println(ProxyLines.AWAITING_POLICY + format(proxy.address()));
        if (!receivePolicy(proxy, config, new PolicyChannel(System.in), err)) {
          return EXIT_BAD_INPUT;
        }
      }
      // The run CA's certificate (public) for the backend to hand the sandbox; never its key.
      proxy
          .caCertificatePem()
          .ifPresent(pem -> err.println(dev.agentsandbox.policy.config.ProxyPolicy.caLine(pem)));
      err.println(ProxyLines.READY + format(proxy.address()));
      proxy.awaitClosed();
      return 0;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return 0;
    } finally {
      ShutdownHook.forget(proxy);
      try {
        proxy.close();
      } catch (UncheckedIOException e) {
        err.println("agent-sandbox proxy: " + e.getMessage());
      }
    }
  }

  /**
   * Reads the first document on the channel and puts it in force. On a bad document, or the
   * channel's end before any, says why in one line and returns false: the caller then closes the
   * proxy, which never served anything but refusals, and exits {@link #EXIT_BAD_INPUT}. After the
   * policy, a watcher keeps reading the channel: a second document is refused (a proxy serves one
   * run) and the first stays in force.
   */
  static boolean receivePolicy(
      RunningProxy proxy, ProxyConfig fixed, PolicyChannel channel, PrintStream err) {
    ProxyConfig policy;
    try {
      Object document =
          channel
              .next()
              .orElseThrow(
                  () ->
                      new InvalidProxyConfigException(
                          "standard input ended before a policy arrived"));
      policy = ProxyConfigs.fromAwaitedPolicy(document, fixed);
      proxy.applyPolicy(policy);
    } catch (InvalidProxyConfigException e) {
      err.println(
          "agent-sandbox proxy: "
              + e.getMessage()
              + " (no policy applied; everything was refused; exiting)");
      return false;
    }
    err.println(
        ProxyLines.POLICY_APPLIED + (policy.runId().isEmpty() ? "" : " for run " + policy.runId()));
    Thread watcher =
        new Thread(
            () -> {
              try {
                if (channel.next().isPresent()) {
                  err.println(
                      "agent-sandbox proxy: refused a second policy on stdin (a proxy serves one"
                          + " run; the first stays in force)");
                }
              } catch (InvalidProxyConfigException e) {
                err.println(
                    "agent-sandbox proxy: refused what followed the policy on stdin ("
                        + e.getMessage()
                        + "; the first policy stays in force)");
              }
            },
            "agent-sandbox-proxy-policy-channel");
    watcher.setDaemon(true);
    watcher.start();
    return true;
  }

  static String format(InetSocketAddress address) {
    InetAddress ip = address.getAddress();
    String host = IpLiteral.format(ip);
    return (ip instanceof Inet6Address ? "[" + host + "]" : host) + ":" + address.getPort();
  }

  /**
   * The process's one shutdown hook, installed when the CLI entry first serves: on SIGTERM it
   * closes the proxies the CLI entry started (and waits for them), so the listener and every
   * connection close before the JVM halts. The embedding API never installs one.
   */
  private static final class ShutdownHook {
    private static final Set<RunningProxy> OPEN = ConcurrentHashMap.newKeySet();

    static {
      Runtime.getRuntime()
          .addShutdownHook(
              new Thread(() -> OPEN.forEach(RunningProxy::close), "agent-sandbox-proxy-shutdown"));
    }

    private ShutdownHook() {}

    static void closeOnExit(RunningProxy proxy) {
      OPEN.add(proxy);
    }

    static void forget(RunningProxy proxy) {
      OPEN.remove(proxy);
    }
  }
}
