package dev.agentsandbox.backend.docker;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.agentsandbox.backend.Isolation;
import dev.agentsandbox.backend.Labels;
import dev.agentsandbox.backend.Manifest;
import dev.agentsandbox.backend.RunContract;
import dev.agentsandbox.backend.RunCredential;
import dev.agentsandbox.backend.RunSpec;
import dev.agentsandbox.backend.SandboxPlan;
import dev.agentsandbox.policy.config.ProxyPolicy;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;

/**
 * The Docker objects of one run, derived from its spec alone: the fenced private network, the
 * network that leads out, the proxy container (on both) and the workload container (on the private
 * network only), and two tmpfs volumes for the workspace and the credentials. The plan and the
 * launch both read them from here, so what a plan shows is what a launch creates.
 */
final class RunLayout {
  /** Stands for the proxy's address on the private network, which Docker assigns at launch. */
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

  /** A warm sandbox's idle workload sleeps this long at most; empty for a run's own sandbox. */
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

  private RunLayout(
      RunSpec spec,
      DockerBackendConfig config,
      String runtime,
      java.util.OptionalLong idle,
      String objectsId) {
    this.spec = spec;
    this.config = config;
    this.runtime = runtime;
    this.idleSeconds = idle;
    this.objectsId = objectsId;
  }

  /**
   * The layout of a run built on a proxy-pool standby: the volumes, networks and proxy are the
   * standby's (named after {@code standbyId}); the workload container is the run's own.
   */
  static RunLayout pooled(
      RunSpec spec, DockerBackendConfig config, String runtime, String standbyId) {
    return new RunLayout(spec, config, runtime, java.util.OptionalLong.empty(), standbyId);
  }

  /**
   * The layout of a warm sandbox: the same objects, but the workload container's process is {@code
   * sleep <idleSeconds>} (the image's {@code sleep}), idle until the run's command is started
   * beside it; it ends by itself when the time is up, so an idle workload cannot outlive its use.
   */
  static RunLayout warm(RunSpec spec, DockerBackendConfig config, String runtime, long idle) {
    return new RunLayout(spec, config, runtime, java.util.OptionalLong.of(idle), spec.runId());
  }

  /** Whether the volumes, networks and proxy come from a proxy-pool standby. */
  boolean pooled() {
    return !objectsId.equals(spec.runId());
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
    return fence(config, objectsId, labels());
  }

  static NetworkSpec fence(DockerBackendConfig config, String id, Map<String, String> labels) {
    return new NetworkSpec(
        fenceName(id), true, FENCE_OPTIONS, labels, config.subnetPool().orElse(null));
  }

  NetworkSpec egress() {
    return egress(config, objectsId, labels());
  }

  static NetworkSpec egress(DockerBackendConfig config, String id, Map<String, String> labels) {
    return new NetworkSpec(
        egressName(id), false, EGRESS_OPTIONS, labels, config.subnetPool().orElse(null));
  }

  /** The proxy container: trusted code, so runc; hardened like the workload all the same. */
  ContainerSpec proxy() {
    Map<String, String> env = new LinkedHashMap<>();
    env.put("AGENT_SANDBOX_PROXY_POLICY", proxyPolicyJson());
    return DockerInspection.proxy(this, spec, proxy(config, objectsId, labels(), env));
  }

  /**
   * A proxy-pool standby's proxy: the same container as a run's, but started awaiting its policy
   * ({@code AGENT_SANDBOX_PROXY_AWAIT}, the address a run's policy names as its {@code listen}),
   * which arrives later on its standard input; labelled with the standby's own labels.
   */
  static ContainerSpec awaitingProxy(
      DockerBackendConfig config, String id, Map<String, String> labels) {
    return proxy(
        config, id, labels, Map.of("AGENT_SANDBOX_PROXY_AWAIT", "0.0.0.0:" + config.proxyPort()));
  }

  private static ContainerSpec proxy(
      DockerBackendConfig config, String id, Map<String, String> labels, Map<String, String> env) {
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
            "asb-" + spec.runId() + "-agent",
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
            Map.of("/tmp", "rw,nosuid,nodev,size=" + config.tmpfsMb() + "m,mode=1777"),
            List.of(
                new VolumeSpec.Mount(workspaceName(), RunContract.WORKSPACE, false),
                new VolumeSpec.Mount(credentialsName(), RunContract.CREDENTIALS_DIR, true)),
            spec.resources().memoryMb() * 1024L * 1024L,
            Math.round(spec.resources().cpus() * 1_000_000_000d),
            spec.resources().pids()));
  }

  /** The policy document the proxy reads ({@code --policy FILE}, see docs/proxy.md). */
  String proxyPolicyJson() {
    try {
      return JSON.writeValueAsString(
          ProxyPolicy.forRun(
                  spec.egress(),
                  spec.runId(),
                  config.proxyPort(),
                  spec.expiresAt(),
                  DockerInspection.PROXY_CREDENTIALS_DIR)
              .toTree());
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("serializing the proxy policy cannot fail for plain maps", e);
    }
  }

  /**
   * The run's credentials as a tar of plain files, each mode 0400 and owned by the workload's user;
   * the daemon extracts it into the proxy's writable mount of the credentials volume.
   */
  byte[] credentialsArchive() {
    String[] ids = config.workloadUser().split(":", 2);
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (TarArchiveOutputStream tar = new TarArchiveOutputStream(bytes)) {
      // A credential the proxy injects goes in as its placeholder: its value is the proxy's alone.
      for (RunCredential credential : spec.workloadCredentials()) {
        byte[] value = credential.value().getBytes(StandardCharsets.UTF_8);
        TarArchiveEntry entry = new TarArchiveEntry(credential.name());
        entry.setMode(0100400);
        entry.setIds(Integer.parseInt(ids[0]), Integer.parseInt(ids[1]));
        entry.setSize(value.length);
        tar.putArchiveEntry(entry);
        tar.write(value);
        tar.closeArchiveEntry();
      }
      tar.finish();
    } catch (IOException e) {
      throw new UncheckedIOException("writing a tar to memory cannot fail", e);
    }
    return bytes.toByteArray();
  }

  /** An empty {@code out/} folder owned by the workload's user, copied onto the workspace. */
  byte[] outFolderArchive() {
    String[] ids = config.workloadUser().split(":", 2);
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (TarArchiveOutputStream tar = new TarArchiveOutputStream(bytes)) {
      TarArchiveEntry entry = new TarArchiveEntry(RunContract.OUT_ARCHIVE_FOLDER + "/");
      entry.setMode(040700);
      entry.setIds(Integer.parseInt(ids[0]), Integer.parseInt(ids[1]));
      tar.putArchiveEntry(entry);
      tar.closeArchiveEntry();
      tar.finish();
    } catch (IOException e) {
      throw new UncheckedIOException("writing a tar to memory cannot fail", e);
    }
    return bytes.toByteArray();
  }

  /** What the credentials copy writes: names, modes and owner, never a value. */
  private Map<String, Object> credentialsCopy(String proxyName) {
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("Container", proxyName);
    body.put("Path", PROXY_CREDENTIALS);
    body.put("Volume", credentialsName());
    body.put("Owner", config.workloadUser());
    body.put("Mode", "0400");
    body.put("Files", spec.credentials().stream().map(RunCredential::name).sorted().toList());
    body.put(
        "Env",
        spec.credentials().stream()
            .filter(c -> c.env().isPresent())
            .map(c -> c.env().orElseThrow() + "=<redacted>")
            .sorted()
            .toList());
    return body;
  }

  /** Everything in creation order, as {@link DockerBackend#launch} creates it. */
  SandboxPlan plan(Isolation isolation) {
    List<Manifest> manifests = new ArrayList<>();
    manifests.add(new Manifest("volume", workspaceName(), workspace().body()));
    manifests.add(new Manifest("volume", credentialsName(), credentials().body()));
    if (inspects()) {
      manifests.add(new Manifest("volume", trustName(), trust().body()));
    }
    manifests.add(new Manifest("network", fenceName(), fence().body()));
    manifests.add(new Manifest("network", egressName(), egress().body()));
    ContainerSpec proxy = proxy();
    manifests.add(new Manifest("container", proxy.name(), proxy.body()));
    Map<String, Object> connect = new LinkedHashMap<>();
    connect.put("Container", proxy.name());
    connect.put("Network", egressName());
    manifests.add(new Manifest("network-connect", egressName(), connect));
    manifests.add(
        new Manifest("credentials-copy", credentialsName(), credentialsCopy(proxy.name())));
    ContainerSpec agent = agent(PROXY_ADDRESS_PLACEHOLDER);
    manifests.add(new Manifest("container", agent.name(), agent.body()));
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("Container", agent.name());
    out.put("Path", RunContract.OUT_DIR);
    out.put("Owner", config.workloadUser());
    out.put("Mode", "0700");
    manifests.add(new Manifest("workspace-out", workspaceName(), out));
    if (inspects()) {
      Map<String, Object> trust = new LinkedHashMap<>();
      trust.put("Container", proxy.name());
      trust.put("Path", DockerInspection.PROXY_TRUST);
      trust.put("Volume", trustName());
      trust.put(
          "Files",
          List.of(
              dev.agentsandbox.backend.RunTrust.RUN_CA,
              dev.agentsandbox.backend.RunTrust.BUNDLE,
              dev.agentsandbox.backend.RunTrust.JAVA_STORE));
      trust.put("From", "the proxy's CA certificate and the workload image's own bundle");
      manifests.add(new Manifest("trust-copy", trustName(), trust));
    }
    return new SandboxPlan(DockerBackend.NAME, runtime, isolation, manifests);
  }
}
