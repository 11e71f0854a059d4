package dev.agentsandbox.backend.docker;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * One Docker network a run creates, in the terms of the Engine API's {@code POST /networks/create}.
 *
 * @param name the network's name
 * @param internal whether Docker fences it off from everything outside itself
 * @param options bridge driver options
 * @param labels the run's labels
 */
record NetworkSpec(
    String name, boolean internal, Map<String, String> options, Map<String, String> labels) {
  NetworkSpec {
    Objects.requireNonNull(name, "name");
    options = Map.copyOf(options);
    labels = Map.copyOf(labels);
  }

  /**
   * The request body, as the Engine API spells it, with its IPAM config: {@code subnet} and {@code
   * gateway} as a launch gives them ({@link DockerCommands#createNetwork}), or as a plan describes
   * them.
   */
  Map<String, Object> body(String subnet, String gateway) {
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("Name", name);
    body.put("Driver", "bridge");
    body.put("Internal", internal);
    body.put("EnableIPv6", false);
    body.put("Attachable", false);
    body.put("Options", new java.util.TreeMap<>(options));
    body.put("Labels", new java.util.TreeMap<>(labels));
    Map<String, Object> config = new LinkedHashMap<>();
    config.put("Subnet", subnet);
    config.put("Gateway", gateway);
    body.put("IPAM", Map.of("Driver", "default", "Config", java.util.List.of(config)));
    return body;
  }
}
