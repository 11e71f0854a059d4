package dev.agentsandbox.cli;

import dev.agentsandbox.backend.Probe;
import dev.agentsandbox.backend.ProbeCache;
import dev.agentsandbox.backend.SandboxBackend;
import dev.agentsandbox.backend.docker.DockerBackend;
import dev.agentsandbox.backend.docker.DockerBackendConfig;
import dev.agentsandbox.backend.docker.DockerClients;
import dev.agentsandbox.backend.docker.SubnetPool;
import dev.agentsandbox.backend.k8s.KubernetesBackend;
import dev.agentsandbox.backend.k8s.KubernetesBackendConfig;
import dev.agentsandbox.backend.k8s.LeaderElectedReaper;
import dev.agentsandbox.backend.microvm.MicroVmBackend;
import dev.agentsandbox.backend.microvm.MicroVmConfig;
import dev.agentsandbox.policy.net.IpLiteral;
import dev.agentsandbox.runs.OperatorEgress;
import dev.agentsandbox.runs.RunSettings;
import dev.agentsandbox.server.RunWiring;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * Builds what {@code serve} runs sandboxes with from its options, and says what it found: the
 * backends and their clients are made here and handed to the server in a {@link RunWiring}, which
 * knows only their contract (docs/architecture.md, "Who composes").
 */
final class Backends {
  private Backends() {}

  /**
   * The backends and settings of {@code serve}; {@code storeIdentity} ({@code Store#identity()})
   * labels what the Docker backend creates, so that its reaper spares other control planes' objects
   * on the same daemon until they expire.
   */
  static RunWiring wiring(ServeCommand options, String storeIdentity, PrintWriter out) {
    String instance = instanceId(options.instanceId);
    RunSettings settings = settings(options, instance);
    OperatorEgress operator = operator(options.proxyHosts, options.inspectUpstreamCa);
    List<SandboxBackend> backends = new ArrayList<>();
    if (!options.microvmAccel.equals("off")) {
      if (!options.microvmAccel.equals("kvm") && !options.microvmAccel.equals("tcg")) {
        throw new IllegalArgumentException(
            "--microvm-accel " + options.microvmAccel + ": expected kvm, tcg or off");
      }
      backends.add(
          new MicroVmBackend(
              MicroVmConfig.defaults(proxyCommand()).toBuilder()
                  .accel(options.microvmAccel)
                  .build()));
    }
    Function<Runnable, AutoCloseable> reaping =
        RunWiring.every(Duration.ofSeconds(Math.max(1, options.reapEverySeconds)));
    if (options.kubernetes) {
      KubernetesClient client = new KubernetesClientBuilder().build();
      backends.add(new KubernetesBackend(client, kubernetesConfig(options), Clock.systemUTC()));
      // Replicas share one cluster: only the holder of the Lease reaps.
      reaping =
          pass -> {
            LeaderElectedReaper elected =
                new LeaderElectedReaper(
                    client,
                    options.k8sNamespace,
                    instance,
                    new LeaderElectedReaper.Timings(
                        Duration.ofSeconds(15),
                        Duration.ofSeconds(10),
                        Duration.ofSeconds(2),
                        Duration.ofSeconds(Math.max(1, options.reapEverySeconds))),
                    pass);
            elected.start();
            return elected;
          };
    }
    backends.add(
        new DockerBackend(
            DockerClients.fromEnvironment(settings.maxConcurrentRuns()),
            dockerConfig(options)
                .concurrentRuns(settings.maxConcurrentRuns())
                .instance(storeIdentity)
                .build()));
    return new RunWiring(backends, operator, settings, reaping);
  }

  /**
   * The run service's settings: the defaults with {@code --max-runs} as the run limit, refused
   * outside 1 to {@value DockerBackendConfig#MAX_CONCURRENT_RUNS} (the most runs an automatic
   * subnet pool is sized for) before any backend is built.
   */
  static RunSettings settings(ServeCommand options, String instance) {
    if (options.maxRuns < 1 || options.maxRuns > DockerBackendConfig.MAX_CONCURRENT_RUNS) {
      throw new IllegalArgumentException(
          "--max-runs "
              + options.maxRuns
              + ": expected 1 to "
              + DockerBackendConfig.MAX_CONCURRENT_RUNS
              + " (the runs and sessions live at once)");
    }
    RunSettings defaults = RunSettings.defaults(instance);
    return new RunSettings(
        instance,
        defaults.tailBytes(),
        defaults.decisionsKept(),
        options.maxRuns,
        defaults.finishedRunsKept(),
        defaults.warmMaxIdle(),
        defaults.spool());
  }

  /**
   * Prints each backend's first probe answer when it comes, from a daemon thread per backend: the
   * server probes every backend in the background from its start ({@code ProbeCache}), a probe can
   * take seconds (the microVM backend boots a guest under KVM to learn whether this host's KVM can
   * run one), and serve need not wait for it to listen. Nothing depends on these lines but the
   * reader; {@code GET .../backends} says the same, and whether a probe is still running.
   */
  static void reportProbes(ProbeCache probes, PrintWriter out) {
    for (SandboxBackend backend : probes.backends()) {
      Thread probing =
          new Thread(
              () -> {
                String line;
                try {
                  Probe probe = probes.current(backend, java.time.Duration.ofMinutes(10));
                  line =
                      probe.available()
                          ? "available, " + probe.runtime() + " (" + probe.isolation() + ")"
                          : "unavailable";
                  line += " - " + probe.detail();
                } catch (RuntimeException e) {
                  line = "unavailable - probing failed: " + e.getMessage();
                } catch (InterruptedException e) {
                  return;
                }
                synchronized (out) {
                  out.println("backend " + backend.name() + ": " + line);
                  out.flush();
                }
              },
              "agent-sandbox-probe-" + backend.name());
      probing.setDaemon(true);
      probing.start();
    }
  }

  /**
   * How the microVM backend starts a run's proxy on the host: this very program's {@code proxy}
   * command, on the JVM that runs it.
   */
  static List<String> proxyCommand() {
    String java = ProcessHandle.current().info().command().orElse("java");
    List<String> command =
        new ArrayList<>(List.of(java, "-Xmx64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"));
    String source = Backends.class.getProtectionDomain().getCodeSource().getLocation().getPath();
    if (source.endsWith(".jar")) {
      command.addAll(List.of("-jar", source));
    } else {
      command.addAll(List.of("-cp", System.getProperty("java.class.path"), Main.class.getName()));
    }
    command.add("proxy");
    return command;
  }

  static KubernetesBackendConfig kubernetesConfig(ServeCommand options) {
    KubernetesBackendConfig config =
        KubernetesBackendConfig.defaults(options.proxyImage, options.k8sNamespace);
    if (!options.k8sRuntimeHandlers.isEmpty()) {
      config = config.toBuilder().trustedRuntimeHandlers(options.k8sRuntimeHandlers).build();
    }
    try {
      return config.toBuilder()
          .nodeCidrs(options.k8sNodeCidrs)
          .apiServerCidrs(options.k8sApiServerCidrs)
          .build();
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "--k8s-node-cidr/--k8s-apiserver-cidr: " + e.getMessage(), e);
    }
  }

  /**
   * The Docker backend's configuration from {@code serve}'s options. Its defaults give a newcomer
   * the fast path the host can afford: a proxy pool sized from the host's memory, and subnets from
   * a range the backend checks is free and sizes for the run limit (docs/backends/docker.md).
   */
  static DockerBackendConfig.Builder dockerConfig(ServeCommand options) {
    DockerBackendConfig.Builder config =
        DockerBackendConfig.builder()
            .proxyImage(options.proxyImage)
            .gvisorRuntime(options.dockerGvisorRuntime);
    if (options.dockerProxyPool.equals("auto")) {
      config.automaticProxyPool();
    } else {
      try {
        config.proxyPoolSize(Integer.parseInt(options.dockerProxyPool));
        config.build();
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(
            "--docker-proxy-pool "
                + options.dockerProxyPool
                + ": expected auto or 0 to 32"
                + (e instanceof NumberFormatException ? "" : " (" + e.getMessage() + ")"),
            e);
      }
    }
    if (options.dockerSubnetPool == null || options.dockerSubnetPool.equals("auto")) {
      return config.automaticSubnets();
    }
    try {
      return config.subnetPool(SubnetPool.parse(options.dockerSubnetPool));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "--docker-subnet-pool " + options.dockerSubnetPool + ": " + e.getMessage(), e);
    }
  }

  static OperatorEgress operator(List<String> proxyHosts) {
    return operator(proxyHosts, null);
  }

  /**
   * The operator's egress settings; {@code upstreamCa}, when given, must be a readable file of PEM
   * certificates (it is checked here, at start, not at a run's launch).
   */
  static OperatorEgress operator(List<String> proxyHosts, java.nio.file.Path upstreamCa) {
    java.util.Optional<String> pem = java.util.Optional.empty();
    if (upstreamCa != null) {
      String text;
      try {
        text =
            java.nio.file.Files.readString(upstreamCa, java.nio.charset.StandardCharsets.US_ASCII);
      } catch (java.io.IOException e) {
        throw new IllegalArgumentException(
            "--inspect-upstream-ca " + upstreamCa + ": cannot be read (" + e.getMessage() + ")", e);
      }
      try {
        if (java.security.cert.CertificateFactory.getInstance("X.509")
            .generateCertificates(
                new java.io.ByteArrayInputStream(
                    text.getBytes(java.nio.charset.StandardCharsets.US_ASCII)))
            .isEmpty()) {
          throw new java.security.cert.CertificateException("no certificate in it");
        }
      } catch (java.security.cert.CertificateException e) {
        throw new IllegalArgumentException(
            "--inspect-upstream-ca "
                + upstreamCa
                + ": not PEM certificates ("
                + e.getMessage()
                + ")",
            e);
      }
      pem = java.util.Optional.of(text);
    }
    return new OperatorEgress(hostsOf(proxyHosts), pem);
  }

  private static Map<String, List<String>> hostsOf(List<String> proxyHosts) {
    Map<String, List<String>> hosts = new LinkedHashMap<>();
    for (String mapping : proxyHosts) {
      int eq = mapping.indexOf('=');
      if (eq <= 0 || eq == mapping.length() - 1) {
        throw new IllegalArgumentException(
            "--proxy-host "
                + mapping
                + ": expected NAME=IP[,IP...], such as mirror.internal=10.0.0.5");
      }
      List<String> addresses = Arrays.asList(mapping.substring(eq + 1).split(","));
      for (String address : addresses) {
        try {
          IpLiteral.parse(address);
        } catch (IllegalArgumentException e) {
          throw new IllegalArgumentException(
              "--proxy-host " + mapping + ": '" + address + "' is not an IP address", e);
        }
      }
      hosts.put(mapping.substring(0, eq).toLowerCase(java.util.Locale.ROOT), addresses);
    }
    return hosts;
  }

  private static String instanceId(String option) {
    return Setting.of(option, "AGENT_SANDBOX_INSTANCE_ID", Backends::hostName);
  }

  private static String hostName() {
    try {
      return InetAddress.getLocalHost().getHostName();
    } catch (UnknownHostException e) {
      return "control-plane";
    }
  }
}
