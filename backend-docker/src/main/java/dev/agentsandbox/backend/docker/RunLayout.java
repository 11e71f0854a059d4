package dev.agentsandbox.backend.docker;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.agentsandbox.backend.Isolation;
import dev.agentsandbox.backend.Labels;
import dev.agentsandbox.backend.RunContract;
import dev.agentsandbox.backend.RunCredential;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.backend.SandboxPlan;
import dev.agentsandbox.policy.config.ProxyPolicy;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;

/**
 * The Docker objects of one run, derived from its spec alone: the fenced private network, the
 * network that leads out, the proxy container (on both) and the workload container (on the private
 * network only), and two tmpfs volumes for the workspace and the credentials. The plan and the
 * launch both read them from here, so what a plan shows is what a launch creates.
 */
final class RunLayout {
  /**
   * Stands for the proxy's address on the private network: the address after the gateway of the
   * fence network's block, known once the block is taken at launch.
   */
  static final String PROXY_ADDRESS_PLACEHOLDER = "<proxy-ip>";

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

  private static final ObjectMapper JSON = new ObjectMapper();

  private final RunSpec spec;
  private final DockerBackendConfig config;
  private final String runtime;

  /** An idle workload sleeps this long at most; empty for a run's own command. */
  private final java.util.OptionalLong idleSeconds;

  /**
   * The id the volumes, networks and proxy are named after: the run's own, or the id of the proxy
   * pool's standby the run was built on ({@link ProxyStandby}).
   */
  private final String objectsId;

  /**
   * The labels on every object of the run: the run's ({@link RunSpec#labels()}) and, when the
   * backend is configured with one, its control plane's {@link Labels#INSTANCE}.
   */
  Map<String, String> labels() {
    return labelled(config, spec.labels());
  }

  /** {@code labels} with the control plane's {@link Labels#INSTANCE} when it has one. */
  static Map<String, String> labelled(DockerBackendConfig config, Map<String, String> labels) {
    if (config.instance().isEmpty()) {
      return labels;
    }
    Map<String, String> all = new java.util.HashMap<>(labels);
    all.put(Labels.INSTANCE, config.instance().get());
    return Map.copyOf(all);
  }

  RunLayout(RunSpec spec, DockerBackendConfig config, String runtime) {
    this(spec, config, runtime, java.util.OptionalLong.empty(), spec.runId());
  }

  /**
   * @param idle how long an idle workload sleeps (a warm sandbox's or a session's: its process is
   *     the image's {@code sleep}, which ends by itself, and it holds the step runner, {@link
   *     SessionRunner}); empty when the run's command is the workload's process
   * @param objectsId the id the volumes, networks and proxy are named after: the run's own, or the
   *     proxy-pool standby's the run is built on; always the run's own for a run that inspects
   *     hosts, since a standby's proxy has neither its injected credentials nor its trust volume
   */
  RunLayout(
      RunSpec spec,
      DockerBackendConfig config,
      String runtime,
      java.util.OptionalLong idle,
      String objectsId) {
    DockerInspection.refuseStandby(spec, objectsId);
    this.spec = spec;
    this.config = config;
    this.runtime = runtime;
    this.idleSeconds = idle;
    this.objectsId = objectsId;
  }

  /** The runner's volume: an idle workload's only (a running container gets no mount later). */
  Optional<VolumeSpec> runnerVolume() {
    return SessionRunner.volume(idleSeconds.isPresent(), spec.runId(), labels());
  }

  /** The OCI runtime the workload runs under. */
  String runtime() {
    return runtime;
  }

  String fenceName() {
    return fenceName(objectsId);
  }

  String egressName() {
    return egressName(objectsId);
  }

  String workspaceName() {
    return workspaceName(objectsId);
  }

  String credentialsName() {
    return credentialsName(objectsId);
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

  /** The trust volume of a run that inspects hosts ({@link DockerInspection}). */
  String trustName() {
    return "asb-" + objectsId + "-trust";
  }

  /** Whether the run's proxy terminates TLS for some host: the workload then trusts its CA. */
  boolean inspects() {
    return !spec.egress().inspect().isEmpty();
  }

  /**
   * The run CA's files, read-only to the workload at {@link dev.agentsandbox.backend.RunTrust#DIR}.
   */
  VolumeSpec trust() {
    return VolumeSpec.tmpfs(
        trustName(), DockerInspection.TRUST_MB, config.workloadUser(), "0555", labels());
  }

  static String proxyName(String id) {
    return "asb-" + id + "-proxy";
  }

  /** The workload's {@link RunContract#WORKSPACE}: a tmpfs only the workload's user can enter. */
  VolumeSpec workspace() {
    return workspace(config, objectsId, labels());
  }

  static VolumeSpec workspace(DockerBackendConfig config, String id, Map<String, String> labels) {
    return VolumeSpec.tmpfs(
        workspaceName(id), config.tmpfsMb(), config.workloadUser(), "0700", labels);
  }

  /** The run's {@link RunContract#CREDENTIALS_DIR}: a tmpfs the workload's user can only read. */
  VolumeSpec credentials() {
    return credentials(config, objectsId, labels());
  }

  static VolumeSpec credentials(DockerBackendConfig config, String id, Map<String, String> labels) {
    return VolumeSpec.tmpfs(
        credentialsName(id), CREDENTIALS_MB, config.workloadUser(), "0500", labels);
  }

  /** The proxy's {@code uid:gid}: never the workload's, so it cannot open the workload's files. */
  String proxyUser() {
    return proxyUser(config);
  }

  static String proxyUser(DockerBackendConfig config) {
    String uid = config.workloadUser().split(":", 2)[0];
    return uid.equals("65533") ? "65532:65532" : "65533:65533";
  }

  NetworkSpec fence() {
    return fence(objectsId, labels());
  }

  static NetworkSpec fence(String id, Map<String, String> labels) {
    return new NetworkSpec(fenceName(id), true, FENCE_OPTIONS, labels);
  }

  NetworkSpec egress() {
    return egress(objectsId, labels());
  }

  static NetworkSpec egress(String id, Map<String, String> labels) {
    return new NetworkSpec(egressName(id), false, EGRESS_OPTIONS, labels);
  }

  /** The objects of the run's fence and proxy, in creation order, with the run's policy. */
  FenceObjects fenceObjects() {
    return new FenceObjects(
        workspace(),
        credentials(),
        inspects() ? Optional.of(trust()) : Optional.empty(),
        fence(),
        egress(),
        address -> proxy(address),
        false);
  }

  /** A proxy-pool standby's fence and proxy, the proxy awaiting its policy. */
  static FenceObjects standbyFence(
      DockerBackendConfig config, String id, Map<String, String> labels) {
    return new FenceObjects(
        workspace(config, id, labels),
        credentials(config, id, labels),
        Optional.empty(),
        fence(id, labels),
        egress(id, labels),
        address -> awaitingProxy(config, id, labels, address),
        true);
  }

  /**
   * The proxy container: trusted code, so runc; hardened like the workload all the same. It is
   * created with {@code address} on the fence network and listens there only (its policy's {@code
   * listen}): not on its address on the egress network, which the host and that network reach.
   */
  ContainerSpec proxy(String address) {
    Map<String, String> env = new LinkedHashMap<>();
    env.put("AGENT_SANDBOX_PROXY_POLICY", proxyPolicyJson(address));
    return DockerInspection.proxy(this, spec, proxy(config, objectsId, labels(), env, address));
  }

  /**
   * A proxy-pool standby's proxy: the same container as a run's, but started awaiting its policy
   * ({@code AGENT_SANDBOX_PROXY_AWAIT}, the address a run's policy names as its {@code listen}:
   * {@code address} on the fence network), which arrives later on its standard input; labelled with
   * the standby's own labels.
   */
  static ContainerSpec awaitingProxy(
      DockerBackendConfig config, String id, Map<String, String> labels, String address) {
    return proxy(
        config,
        id,
        labels,
        Map.of("AGENT_SANDBOX_PROXY_AWAIT", address + ":" + config.proxyPort()),
        address);
  }

  private static ContainerSpec proxy(
      DockerBackendConfig config,
      String id,
      Map<String, String> labels,
      Map<String, String> env,
      String address) {
    return new ContainerSpec(
        proxyName(id),
        config.proxyImage(),
        List.of(),
        List.of(),
        env,
        java.util.Set.of(),
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

  /** The workload container, its proxy variables pointing at {@code proxyAddress}. */
  ContainerSpec agent(String proxyAddress) {
    String proxyUrl = "http://" + proxyAddress + ":" + config.proxyPort();
    Map<String, String> env = new LinkedHashMap<>(new TreeMap<>(spec.env()));
    Set<String> secret = new HashSet<>(spec.env().keySet());
    for (RunCredential credential : spec.workloadCredentials()) {
      credential
          .env()
          .ifPresent(
              key -> {
                env.put(key, credential.value());
                secret.add(key);
              });
    }
    // Both spellings: curl reads only the lower-case http_proxy, most other tools either.
    for (String key : List.of("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")) {
      env.put(key, proxyUrl);
    }
    env.put("NO_PROXY", "");
    env.put("no_proxy", "");
    env.put(RunContract.OUT_ENV, RunContract.OUT_DIR);
    env.put(RunContract.CREDENTIALS_ENV, RunContract.CREDENTIALS_DIR);
    env.put(RunContract.RUN_ID_ENV, spec.runId());
    for (String key :
        List.of(RunContract.OUT_ENV, RunContract.CREDENTIALS_ENV, RunContract.RUN_ID_ENV)) {
      secret.remove(key);
    }
    return DockerInspection.agent(
        this,
        new ContainerSpec(
            agentName(),
            spec.image(),
            idleSeconds.isPresent()
                ? List.of("sleep", Long.toString(idleSeconds.getAsLong()))
                : List.of(),
            idleSeconds.isPresent() ? List.of() : spec.command(),
            env,
            secret,
            config.workloadUser(),
            labels(),
            runtime,
            fenceName(),
            Optional.empty(),
            Map.of("/tmp", "rw,nosuid,nodev,size=" + config.tmpfsMb() + "m,mode=1777"),
            SessionRunner.mounts(
                new VolumeSpec.Mount(workspaceName(), RunContract.WORKSPACE, false),
                new VolumeSpec.Mount(credentialsName(), RunContract.CREDENTIALS_DIR, true),
                runnerVolume()),
            spec.resources().memoryMb() * 1024L * 1024L,
            Math.round(spec.resources().cpus() * 1_000_000_000d),
            spec.resources().pids()));
  }

  /**
   * The policy document the proxy reads ({@code --policy FILE}, see docs/proxy.md), listening on
   * {@code address} (its address on the fence network) only.
   */
  String proxyPolicyJson(String address) {
    try {
      return JSON.writeValueAsString(
          ProxyPolicy.forRun(
                  spec.egress(),
                  spec.runId(),
                  address,
                  config.proxyPort(),
                  spec.expiresAt(),
                  DockerInspection.PROXY_CREDENTIALS_DIR)
              .toTree());
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("serializing the proxy policy cannot fail for plain maps", e);
    }
  }

  /** The files this run's sandbox is given before its workload starts. */
  RunFiles files() {
    return new RunFiles(spec, config, credentialsName(), agentName());
  }

  /** The deliveries of {@link #files()}, in order. */
  List<Delivery> deliveries() {
    return SessionRunner.deliveries(files().deliveries(), runnerVolume(), agentName());
  }

  String agentName() {
    return "asb-" + spec.runId() + "-agent";
  }

  /**
   * Everything in creation order, as {@link DockerBackend#launch} creates it; each network's block
   * is described as coming from {@code subnets} (a range, or how it is chosen).
   */
  SandboxPlan plan(Isolation isolation, String subnets) {
    return RunPlan.of(this, isolation, subnets);
  }
}
