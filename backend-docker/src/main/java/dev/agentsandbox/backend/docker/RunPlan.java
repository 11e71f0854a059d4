package dev.agentsandbox.backend.docker;

import dev.agentsandbox.backend.Isolation;
import dev.agentsandbox.backend.Manifest;
import dev.agentsandbox.backend.RunContract;
import dev.agentsandbox.backend.RunTrust;
import dev.agentsandbox.backend.SandboxPlan;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A run's plan: the objects of its {@link RunLayout} in the order a launch creates them, with the
 * copies made into them, so what a plan shows is what a launch creates.
 */
final class RunPlan {
  private RunPlan() {}

  /**
   * Everything in creation order, as {@link DockerBackend#launch} creates it; each network's block
   * is described as coming from {@code subnets} (a range, or how it is chosen).
   */
  static SandboxPlan of(RunLayout layout, Isolation isolation, String subnets) {
    String block = "<a free /" + SubnetPool.DEFAULT_BLOCK_PREFIX + " of " + subnets + ">";
    String gateway = "<its first address>";
    List<Manifest> manifests = new ArrayList<>();
    manifests.add(new Manifest("volume", layout.workspaceName(), layout.workspace().body()));
    manifests.add(new Manifest("volume", layout.credentialsName(), layout.credentials().body()));
    if (layout.inspects()) {
      manifests.add(new Manifest("volume", layout.trustName(), layout.trust().body()));
    }
    manifests.add(new Manifest("network", layout.fenceName(), layout.fence().body(block, gateway)));
    manifests.add(
        new Manifest("network", layout.egressName(), layout.egress().body(block, gateway)));
    ContainerSpec proxy = layout.proxy(RunLayout.PROXY_ADDRESS_PLACEHOLDER);
    manifests.add(new Manifest("container", proxy.name(), proxy.body()));
    Map<String, Object> connect = new LinkedHashMap<>();
    connect.put("Container", proxy.name());
    connect.put("Network", layout.egressName());
    manifests.add(new Manifest("network-connect", layout.egressName(), connect));
    manifests.add(
        new Manifest(
            "credentials-copy",
            layout.credentialsName(),
            layout.files().credentialsCopy(proxy.name())));
    ContainerSpec agent = layout.agent(RunLayout.PROXY_ADDRESS_PLACEHOLDER);
    manifests.add(new Manifest("container", agent.name(), agent.body()));
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("Container", agent.name());
    out.put("Path", RunContract.OUT_DIR);
    out.put("Owner", agent.user());
    out.put("Mode", "0700");
    manifests.add(new Manifest("workspace-out", layout.workspaceName(), out));
    if (layout.inspects()) {
      Map<String, Object> trust = new LinkedHashMap<>();
      trust.put("Container", proxy.name());
      trust.put("Path", DockerInspection.PROXY_TRUST);
      trust.put("Volume", layout.trustName());
      trust.put("Files", List.of(RunTrust.RUN_CA, RunTrust.BUNDLE, RunTrust.JAVA_STORE));
      trust.put("From", "the proxy's CA certificate and the workload image's own bundle");
      manifests.add(new Manifest("trust-copy", layout.trustName(), trust));
    }
    return new SandboxPlan(DockerBackend.NAME, layout.runtime(), isolation, manifests);
  }
}
