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
 * @param pool the operator's subnet pool the network's block comes from at launch, or null for
 *     Docker's default address pools
 */
record NetworkSpec(
    String name,
    boolean internal,
    Map<String, String> options,
    Map<String, String> labels,
    SubnetPool pool) {
  NetworkSpec {
    Objects.requireNonNull(name, "name");
    options = Map.copyOf(options);
    labels = Map.copyOf(labels);
  }

  NetworkSpec(
      String name, boolean internal, Map<String, String> options, Map<String, String> labels) {
    this(name, internal, options, labels, null);
  }

  /** The request body, as the Engine API spells it. */
  Map<String, Object> body() {
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("Name", name);
    body.put("Driver", "bridge");
    body.put("Internal", internal);
    body.put("EnableIPv6", false);
    body.put("Attachable", false);
    body.put("Options", new java.util.TreeMap<>(options));
    body.put("Labels", new java.util.TreeMap<>(labels));
    if (pool != null) {
      // The block is taken at launch; a plan names where it comes from.
      Map<String, Object> config = new LinkedHashMap<>();
      config.put("Subnet", "<a free /" + pool.blockPrefix() + " of " + pool.range() + ">");
      config.put("Gateway", "<its first address>");
      body.put("IPAM", Map.of("Driver", "default", "Config", java.util.List.of(config)));
    }
    return body;
  }
}
