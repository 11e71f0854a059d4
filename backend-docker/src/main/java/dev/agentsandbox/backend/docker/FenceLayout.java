package dev.agentsandbox.backend.docker;

import dev.agentsandbox.backend.Labels;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The objects of a sandbox's fence, named after one id: the two tmpfs volumes, the fenced private
 * network, the network that leads out and the proxy container on both. The id is a run's own or a
 * proxy-pool standby's ({@link ProxyStandby}); a run's {@link RunLayout} and a standby both
 * describe their fence from here, so a run built on a standby gets exactly the fence it would have
 * created itself, and the reaper finds both by the same names and labels.
 *
 * @param id the id the objects are named after
 * @param labels the labels on every object ({@link #labelled})
 */
record FenceLayout(DockerBackendConfig config, String id, Map<String, String> labels) {
  /**
   * The host gets no address on the private bridge, so nothing in the sandbox can reach a host
   * service through it; with {@code Internal} Docker also drops everything routed off the bridge.
   */
  static final Map<String, String> FENCE_OPTIONS =
      Map.of(
          "com.docker.network.bridge.inhibit_ipv4", "true",
          "com.docker.network.bridge.enable_ip_masquerade", "false");

  /** Only the proxy sits on the way-out network; nothing else should talk across it. */
  static final Map<String, String> EGRESS_OPTIONS =
      Map.of("com.docker.network.bridge.enable_icc", "false");

  /**
   * Where the proxy mounts the run's two volumes. A tmpfs volume is unmounted, and its content
   * lost, once no running container uses it; the proxy runs for the whole run, so it holds them. It
   * runs under another uid than the workload and has no capabilities, so it can neither read nor
   * write the workload's 0700 workspace or its 0500 credentials folder.
   */
  static final String PROXY_HOLD = "/run/asb-hold";

  /** Where the proxy mounts the credentials volume, writable: the daemon copies them in there. */
  static final String PROXY_CREDENTIALS = PROXY_HOLD + "/credentials";

  /** Where the proxy mounts the workspace volume, read-only. */
  static final String PROXY_WORKSPACE = PROXY_HOLD + "/workspace";

  private static final int CREDENTIALS_MB = 1;

  /** {@code labels} with the control plane's {@link Labels#INSTANCE} when it has one. */
  static Map<String, String> labelled(DockerBackendConfig config, Map<String, String> labels) {
    if (config.instance().isEmpty()) {
      return labels;
    }
    Map<String, String> all = new HashMap<>(labels);
    all.put(Labels.INSTANCE, config.instance().get());
    return Map.copyOf(all);
  }

  static String fenceName(String id) {
    return "asb-" + id + "-fence";
  }

  static String egressName(String id) {
    return "asb-" + id + "-egress";
  }

  static String workspaceName(String id) {
    return "asb-" + id + "-workspace";
  }

  static String credentialsName(String id) {
    return "asb-" + id + "-credentials";
  }

  static String proxyName(String id) {
    return "asb-" + id + "-proxy";
  }

  /** The proxy's {@code uid:gid}: never the workload's, so it cannot open the workload's files. */
  static String proxyUser(DockerBackendConfig config) {
    String uid = config.workloadUser().split(":", 2)[0];
    return uid.equals("65533") ? "65532:65532" : "65533:65533";
  }

  /** The workload's {@code RunContract#WORKSPACE}: a tmpfs only the workload's user can enter. */
  VolumeSpec workspace() {
    return VolumeSpec.tmpfs(
        workspaceName(id), config.tmpfsMb(), config.workloadUser(), "0700", labels);
  }

  /** The run's {@code RunContract#CREDENTIALS_DIR}: a tmpfs the workload's user can only read. */
  VolumeSpec credentials() {
    return VolumeSpec.tmpfs(
        credentialsName(id), CREDENTIALS_MB, config.workloadUser(), "0500", labels);
  }

  NetworkSpec fence() {
    return new NetworkSpec(fenceName(id), true, FENCE_OPTIONS, labels);
  }

  NetworkSpec egress() {
    return new NetworkSpec(egressName(id), false, EGRESS_OPTIONS, labels);
  }

  /** A proxy-pool standby's fence and proxy, the proxy awaiting its policy. */
  FenceObjects standbyObjects() {
    return new FenceObjects(
        workspace(), credentials(), Optional.empty(), fence(), egress(), this::awaitingProxy, true);
  }

  /**
   * A proxy-pool standby's proxy: the same container as a run's, but started awaiting its policy
   * ({@code AGENT_SANDBOX_PROXY_AWAIT}, the address a run's policy names as its {@code listen}:
   * {@code address} on the fence network), which arrives later on its standard input; labelled with
   * the standby's own labels.
   */
  ContainerSpec awaitingProxy(String address) {
    return proxy(Map.of("AGENT_SANDBOX_PROXY_AWAIT", address + ":" + config.proxyPort()), address);
  }

  /**
   * The proxy container with {@code env}: trusted code, so runc; hardened like the workload all the
   * same. It is created with {@code address} on the fence network and listens there only (its
   * policy's {@code listen}): not on its address on the egress network, which the host and that
   * network reach.
   */
  ContainerSpec proxy(Map<String, String> env, String address) {
    return new ContainerSpec(
        proxyName(id),
        config.proxyImage(),
        List.of(),
        List.of(),
        env,
        Set.of(),
        proxyUser(config),
        labels,
        "runc",
        fenceName(id),
        Optional.of(address),
        Map.of("/tmp", "rw,noexec,nosuid,nodev,size=16m,mode=1777"),
        List.of(
            new VolumeSpec.Mount(workspaceName(id), PROXY_WORKSPACE, true),
            new VolumeSpec.Mount(credentialsName(id), PROXY_CREDENTIALS, false)),
        config.proxyMemoryMb() * 1024L * 1024L,
        1_000_000_000L,
        512);
  }
}
