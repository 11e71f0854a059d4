package dev.agentsandbox.backend.docker;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.model.Info;
import com.github.dockerjava.api.model.Network;
import com.github.dockerjava.api.model.RuntimeInfo;
import dev.agentsandbox.backend.Isolation;
import dev.agentsandbox.backend.PreparedSandbox;
import dev.agentsandbox.backend.Probe;
import dev.agentsandbox.backend.ReapReport;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.backend.Sandbox;
import dev.agentsandbox.backend.SandboxBackend;
import dev.agentsandbox.backend.SandboxListener;
import dev.agentsandbox.backend.SandboxPlan;
import dev.agentsandbox.backend.UnableToLaunchSandboxException;
import dev.agentsandbox.policy.net.Cidr;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeSet;
import java.util.function.Predicate;

/**
 * Sandboxes as Docker containers: per run, a private network that reaches nothing outside itself,
 * the run's egress proxy on it and on a network that leads out, and the workload on the private
 * network only, under gVisor when the daemon has {@code runsc}. See docs/backends/docker.md.
 */
public final class DockerBackend implements SandboxBackend {
  /** The backend's configured name. */
  public static final String NAME = "docker";

  /** No run lives longer than this, whatever its ttl says. */
  public static final Duration MAX_TTL = Duration.ofHours(4);

  private final DockerClient client;
  private final DockerBackendConfig config;
  private final DockerReaper reaper;
  private final SubnetAllocator subnets;

  public DockerBackend(DockerClient client, DockerBackendConfig config) {
    this.client = Objects.requireNonNull(client, "client");
    this.config = Objects.requireNonNull(config, "config");
    this.reaper = new DockerReaper(client, config.instance());
    this.subnets =
        config
            .subnetPool()
            .map(pool -> new SubnetAllocator(pool, this::daemonSubnets, Clock.systemUTC()))
            .orElse(null);
  }

  /** The subnets of every network the daemon has, whoever created it. */
  private List<Cidr> daemonSubnets() {
    List<Cidr> found = new ArrayList<>();
    try {
      for (Network network : client.listNetworksCmd().exec()) {
        Network.Ipam ipam = network.getIpam();
        if (ipam == null || ipam.getConfig() == null) {
          continue;
        }
        for (Network.Ipam.Config config : ipam.getConfig()) {
          if (config.getSubnet() != null && !config.getSubnet().isBlank()) {
            try {
              found.add(Cidr.parse(config.getSubnet()));
            } catch (IllegalArgumentException ignored) {
              // Not a subnet this allocator could hand out anyway.
            }
          }
        }
      }
    } catch (RuntimeException e) {
      throw new UnableToLaunchSandboxException(
          "listing the daemon's networks to pick free subnets from "
              + config.subnetPool().orElseThrow().range()
              + ": "
              + DockerErrors.describe(e),
          e);
    }
    return found;
  }

  /** How many subnet-pool blocks live sandboxes hold; 0 without a pool. */
  int subnetsHeld() {
    return subnets == null ? 0 : subnets.held();
  }

  @Override
  public String name() {
    return NAME;
  }

  /** Credentials arrive as 0400 files on a per-run tmpfs volume; see {@link RunLayout}. */
  @Override
  public boolean deliversCredentials() {
    return true;
  }

  @Override
  public Probe probe() {
    Info info;
    try {
      client.pingCmd().exec();
      info = client.infoCmd().exec();
    } catch (RuntimeException e) {
      return Probe.unavailable(
          NAME,
          "reaching the Docker daemon: "
              + DockerErrors.describe(e)
              + " (start it with scripts/install-host.sh, or point DOCKER_HOST at a running one)");
    }
    Map<String, RuntimeInfo> runtimes = info.getRuntimes() == null ? Map.of() : info.getRuntimes();
    String found =
        "Docker " + info.getServerVersion() + ", runtimes " + new TreeSet<>(runtimes.keySet());
    if (runtimes.containsKey(config.gvisorRuntime())) {
      return new Probe(
          NAME,
          true,
          Isolation.GVISOR,
          config.gvisorRuntime(),
          found + ": workloads run under gVisor");
    }
    return new Probe(
        NAME,
        true,
        Isolation.CONTAINER,
        "runc",
        found
            + ": no '"
            + config.gvisorRuntime()
            + "' runtime, workloads share the host kernel (scripts/install-host.sh registers runsc)");
  }

  @Override
  public SandboxPlan plan(RunSpec spec) {
    Probe probe = probe();
    Isolation isolation = probe.available() ? probe.isolation() : Isolation.CONTAINER;
    String runtime = probe.available() ? probe.runtime() : "runc";
    return new RunLayout(spec, config, runtime).plan(isolation);
  }

  @Override
  public Sandbox launch(RunSpec spec, SandboxListener listener) {
    Probe probe = probe();
    return launch(spec, listener, probe, probe.runtime());
  }

  /**
   * Launches with a chosen runtime instead of the strongest one; for operators who pin runc and for
   * tests that cover each runtime the daemon has.
   */
  Sandbox launch(RunSpec spec, SandboxListener listener, String runtime) {
    return launch(spec, listener, probe(), runtime);
  }

  private Sandbox launch(RunSpec spec, SandboxListener listener, Probe probe, String runtime) {
    Objects.requireNonNull(listener, "listener");
    refuseUnusable(spec, probe, runtime);
    Duration ttl = spec.ttl().compareTo(MAX_TTL) > 0 ? MAX_TTL : spec.ttl();
    DockerSandbox sandbox =
        new DockerSandbox(
            client,
            new RunLayout(spec, config, runtime),
            spec.runId(),
            runtime,
            listener,
            Instant.now().plus(ttl),
            subnets);
    sandbox.start(config.proxyReadyTimeout());
    return sandbox;
  }

  /** Warm sandboxes: see {@link WarmDockerSandbox} and docs/backends/docker.md. */
  @Override
  public boolean prepares() {
    return true;
  }

  @Override
  public PreparedSandbox prepare(RunSpec spec, Instant idleUntil) {
    Probe probe = probe();
    return prepare(spec, idleUntil, probe, probe.runtime());
  }

  /** Prepares under a chosen runtime; for tests that cover each runtime the daemon has. */
  WarmDockerSandbox prepare(RunSpec spec, Instant idleUntil, String runtime) {
    return prepare(spec, idleUntil, probe(), runtime);
  }

  private WarmDockerSandbox prepare(RunSpec spec, Instant idleUntil, Probe probe, String runtime) {
    refuseUnusable(spec, probe, runtime);
    Duration ttl = spec.ttl().compareTo(MAX_TTL) > 0 ? MAX_TTL : spec.ttl();
    Instant now = Instant.now();
    Duration idle = idleUntil.isAfter(now) ? Duration.between(now, idleUntil) : Duration.ZERO;
    // The idle process outlives the longest wait plus the longest run, and no more: a warm
    // sandbox nobody took, or whose control plane died, stops its workload by itself.
    long sleepSeconds = idle.plus(ttl).plusMinutes(1).toSeconds();
    List<String> entrypoint;
    try {
      // The run's command goes after the image's entrypoint, as it would in a run of its own.
      com.github.dockerjava.api.model.ContainerConfig image =
          client.inspectImageCmd(spec.image()).exec().getConfig();
      String[] found = image == null ? null : image.getEntrypoint();
      entrypoint = found == null ? List.of() : List.of(found);
    } catch (RuntimeException e) {
      throw new UnableToLaunchSandboxException(
          "preparing a warm sandbox for agent "
              + spec.agent()
              + ": reading image "
              + spec.image()
              + ": "
              + DockerErrors.describe(e)
              + " (images are not pulled: build them with images/build.sh or load them first)",
          e);
    }
    HandOverListener listener = new HandOverListener();
    DockerSandbox sandbox =
        new DockerSandbox(
            client,
            RunLayout.warm(spec, config, runtime, sleepSeconds),
            spec.runId(),
            runtime,
            listener,
            idleUntil.plus(ttl),
            subnets);
    sandbox.start(config.proxyReadyTimeout());
    return new WarmDockerSandbox(client, sandbox, spec, config, runtime, entrypoint, listener);
  }

  private void refuseUnusable(RunSpec spec, Probe probe, String runtime) {
    if (!probe.available()) {
      throw new UnableToLaunchSandboxException(
          "launching the sandbox of run " + spec.runId() + " on docker: " + probe.detail());
    }
    boolean gvisor = runtime.equals(config.gvisorRuntime());
    if (spec.requireRuntimeClass() && !gvisor) {
      throw new UnableToLaunchSandboxException(
          "launching the sandbox of run "
              + spec.runId()
              + " on docker: the run requires gVisor but the workload would run under "
              + runtime
              + " ("
              + probe.detail()
              + ")");
    }
  }

  @Override
  public ReapReport reap(Instant now, Predicate<String> isLive) {
    return reaper.reap(now, isLive);
  }
}
