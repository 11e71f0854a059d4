package dev.agentsandbox.backend.docker;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;

/**
 * One container a run creates, with every setting the fence and the caps depend on; {@link #body()}
 * is the Engine API's {@code POST /containers/create} body and {@link DockerCommands} submits
 * exactly these values.
 *
 * @param name the container's name
 * @param image the image
 * @param entrypoint the entrypoint, or empty for the image's own
 * @param command the command
 * @param env the environment, in order
 * @param secretEnvKeys keys of {@code env} whose values a plan shows as redacted
 * @param user the {@code uid:gid} it runs as
 * @param labels the run's labels
 * @param runtime the OCI runtime ({@code runsc}, {@code runc})
 * @param network the network it is created on
 * @param address its fixed IPv4 address on that network; empty: the next free one, as Docker picks
 * @param tmpfs writable tmpfs mounts, path to mount options
 * @param mounts the run's own volumes mounted into it
 * @param memoryBytes the memory cap, swap included
 * @param nanoCpus the CPU cap in billionths of a core
 * @param pidsLimit the most processes and threads at once
 */
record ContainerSpec(
    String name,
    String image,
    List<String> entrypoint,
    List<String> command,
    Map<String, String> env,
    Set<String> secretEnvKeys,
    String user,
    Map<String, String> labels,
    String runtime,
    String network,
    Optional<String> address,
    Map<String, String> tmpfs,
    List<VolumeSpec.Mount> mounts,
    long memoryBytes,
    long nanoCpus,
    long pidsLimit) {
  /** Every capability goes; the workload needs none to compute and talk to its proxy. */
  static final List<String> CAP_DROP = List.of("ALL");

  /** Set-uid binaries in the image cannot raise privileges again. */
  static final List<String> SECURITY_OPT = List.of("no-new-privileges:true");

  /** Bounded json-file logs: a chatty workload cannot fill the host's disk. */
  static final Map<String, String> LOG_OPTIONS = Map.of("max-size", "8m", "max-file", "2");

  ContainerSpec {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(image, "image");
    entrypoint = List.copyOf(entrypoint);
    command = List.copyOf(command);
    env = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(env));
    secretEnvKeys = Set.copyOf(secretEnvKeys);
    Objects.requireNonNull(user, "user");
    labels = Map.copyOf(labels);
    Objects.requireNonNull(runtime, "runtime");
    Objects.requireNonNull(network, "network");
    Objects.requireNonNull(address, "address");
    tmpfs = Map.copyOf(tmpfs);
    mounts = List.copyOf(mounts);
  }

  /** {@code KEY=value} strings, as Docker takes them. */
  List<String> envList() {
    List<String> list = new ArrayList<>();
    env.forEach((k, v) -> list.add(k + "=" + v));
    return list;
  }

  /** The create request's body; secret environment values are shown as {@code <redacted>}. */
  Map<String, Object> body() {
    List<String> shownEnv = new ArrayList<>();
    env.forEach((k, v) -> shownEnv.add(k + "=" + (secretEnvKeys.contains(k) ? "<redacted>" : v)));
    Map<String, Object> host = new LinkedHashMap<>();
    host.put("Runtime", runtime);
    host.put("NetworkMode", network);
    host.put("Privileged", false);
    host.put("CapDrop", CAP_DROP);
    host.put("SecurityOpt", SECURITY_OPT);
    host.put("ReadonlyRootfs", true);
    host.put("Tmpfs", new TreeMap<>(tmpfs));
    host.put("Binds", List.of());
    host.put("Mounts", mounts.stream().map(VolumeSpec.Mount::body).toList());
    host.put("Memory", memoryBytes);
    host.put("MemorySwap", memoryBytes);
    host.put("NanoCpus", nanoCpus);
    host.put("PidsLimit", pidsLimit);
    host.put("LogConfig", Map.of("Type", "json-file", "Config", new TreeMap<>(LOG_OPTIONS)));
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("name", name);
    body.put("Image", image);
    if (!entrypoint.isEmpty()) {
      body.put("Entrypoint", entrypoint);
    }
    body.put("Cmd", command);
    body.put("Env", shownEnv);
    body.put("User", user);
    body.put("Labels", new TreeMap<>(labels));
    body.put("HostConfig", host);
    address.ifPresent(
        ip ->
            body.put(
                "NetworkingConfig",
                Map.of(
                    "EndpointsConfig",
                    Map.of(network, Map.of("IPAMConfig", Map.of("IPv4Address", ip))))));
    return body;
  }
}
