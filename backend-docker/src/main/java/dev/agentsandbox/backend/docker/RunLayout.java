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
 * The Docker objects of one run, derived from its spec alone: its fence ({@link FenceLayout}: the
 * fenced private network, the network that leads out, the proxy container on both, and two tmpfs
 * volumes for the workspace and the credentials) given the run's policy, and the workload container
 * (on the private network only) with its files. The plan and the launch both read them from here,
 * so what a plan shows is what a launch creates.
 */
final class RunLayout {
  /**
   * Stands for the proxy's address on the private network: the address after the gateway of the
   * fence network's block, known once the block is taken at launch.
   */
  static final String PROXY_ADDRESS_PLACEHOLDER = "<proxy-ip>";

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

  /** The fence's objects, named after {@link #objectsId}. */
  private final FenceLayout objects;

  /**
   * The labels on every object of the run: the run's ({@link RunSpec#labels()}) and, when the
   * backend is configured with one, its control plane's {@link Labels#INSTANCE}.
   */
  Map<String, String> labels() {
    return FenceLayout.labelled(config, spec.labels());
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
    this.objects = new FenceLayout(config, objectsId, labels());
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
    return FenceLayout.fenceName(objectsId);
  }

  String egressName() {
    return FenceLayout.egressName(objectsId);
  }

  String workspaceName() {
    return FenceLayout.workspaceName(objectsId);
  }

  String credentialsName() {
    return FenceLayout.credentialsName(objectsId);
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

  /** The workload's {@link RunContract#WORKSPACE} ({@link FenceLayout#workspace()}). */
  VolumeSpec workspace() {
    return objects.workspace();
  }

  /** The run's {@link RunContract#CREDENTIALS_DIR} ({@link FenceLayout#credentials()}). */
  VolumeSpec credentials() {
    return objects.credentials();
  }

  NetworkSpec fence() {
    return objects.fence();
  }

  NetworkSpec egress() {
    return objects.egress();
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

  /**
   * The run's proxy container ({@link FenceLayout#proxy}) given the run's policy, listening on
   * {@code address} on the fence network only.
   */
  ContainerSpec proxy(String address) {
    Map<String, String> env = new LinkedHashMap<>();
    env.put("AGENT_SANDBOX_PROXY_POLICY", proxyPolicyJson(address));
    return DockerInspection.proxy(this, spec, objects.proxy(env, address));
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
