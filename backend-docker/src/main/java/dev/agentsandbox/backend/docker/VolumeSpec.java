package dev.agentsandbox.backend.docker;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * A per-run Docker volume: the local driver backed by a tmpfs of its own, so that nothing a run
 * writes or receives reaches the host's disk, and it is gone once no running container uses it.
 *
 * @param name the volume's name
 * @param driverOptions the local driver's options ({@code type=tmpfs}, size, owner, mode)
 * @param labels the run's labels
 */
record VolumeSpec(String name, Map<String, String> driverOptions, Map<String, String> labels) {
  VolumeSpec {
    Objects.requireNonNull(name, "name");
    driverOptions = Map.copyOf(driverOptions);
    labels = Map.copyOf(labels);
  }

  /**
   * A tmpfs volume of {@code sizeMb} MiB whose root is owned by {@code uid:gid} with {@code mode}.
   */
  static VolumeSpec tmpfs(
      String name, int sizeMb, String owner, String mode, Map<String, String> labels) {
    String[] ids = owner.split(":", 2);
    return new VolumeSpec(
        name,
        Map.of(
            "type",
            "tmpfs",
            "device",
            "tmpfs",
            "o",
            "size=" + sizeMb + "m,uid=" + ids[0] + ",gid=" + ids[1] + ",mode=" + mode),
        labels);
  }

  /** The Engine API's {@code POST /volumes/create} body. */
  Map<String, Object> body() {
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("Name", name);
    body.put("Driver", "local");
    body.put("DriverOpts", new TreeMap<>(driverOptions));
    body.put("Labels", new TreeMap<>(labels));
    return body;
  }

  /**
   * A mount of a volume into a container.
   *
   * @param volume the volume's name
   * @param target the path inside the container
   * @param readOnly whether the container may not write to it
   */
  record Mount(String volume, String target, boolean readOnly) {
    Map<String, Object> body() {
      Map<String, Object> body = new LinkedHashMap<>();
      body.put("Type", "volume");
      body.put("Source", volume);
      body.put("Target", target);
      body.put("ReadOnly", readOnly);
      return body;
    }
  }
}
